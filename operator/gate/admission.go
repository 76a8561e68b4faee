package gate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/waits"
	"github.com/kmaint/kmaint/operator/gate/plan"
	"github.com/kmaint/kmaint/operator/gate/podcheck"
	"github.com/kmaint/kmaint/operator/gate/quorum"
	"github.com/kmaint/kmaint/operator/gate/view"
	"github.com/kmaint/kmaint/policies"
)

// The admission path, top to bottom: observe reads what may hold the pool
// and resolves its budget (admission); decide runs the pool-wide holds
// once (policies.Holds), then plans, node by node in the order they asked
// (opt-outs, windows and freezes, then the node's pods when its turn
// comes), within the budget (plan.Admissions), and runs the holds again
// once the API server said the cache is behind (fresh.go); admit writes
// what was decided, and setStatus reports the same decision (Blocked, Waiting
// through the pool's status).

// windowErr says why the pool's windows cannot be used; nothing is
// admitted then.
func (a *admission) windowErr() error {
	if a.windows == nil {
		return nil
	}
	return a.windows.PoolErr()
}

// holdInput is what the pool-wide holds read: what observe found, and the
// halt through its one accessor.
func (st *poolState) holdInput() policies.WaitInput {
	in := st.holdBase()
	// Held, every waiting node waits; the holds' messages count them.
	if st.selectorErr == nil {
		in.Budget.Waiting, in.Budget.Pending = st.waitingHead(plan.WaitingNamed)
	}
	return in
}

// waitingHead names the first n waiting nodes in the queue's order, and
// counts them all (plan.WaitingHead).
func (st *poolState) waitingHead(n int) (names []string, count int) {
	return plan.WaitingHead(st.views, st.queue(), n)
}

// holdBase is holdInput without the nodes that wait, which the plan
// tells once made: what the pool's spec, status and windows and the
// cluster's stop say, gathered as for a node's requests (package waits),
// and what only the gate knows, a node that halts the pool before its
// status says so and what the API server said of the cache.
func (st *poolState) holdBase() policies.WaitInput {
	a := &st.admission
	in := waits.Pool(waits.Sources{Pools: []string{st.pool.Name}, Pool: st.pool, Selection: st.selection, Unreadable: st.unreadablePools,
		Stop: a.stop, Windows: a.windows})
	if in.Halt == nil {
		in.Halt = st.nodeHalt()
	}
	in.CacheBehind = st.freshness.behind
	in.SilencesUnavailable = st.silencesUnavailable()
	in.QuorumAtRisk = st.admission.quorum
	if in.QuorumAtRisk == "" && st.guarded() {
		// What needs no read: another node down outside kmaint's
		// maintenance (controlplane.go).
		in.QuorumAtRisk = quorum.AtRisk(quorum.Facts{Unavailable: st.downOutsideMaintenance()})
	}
	return in
}

// poolHold runs the pool-wide holds, once, and returns the first that
// holds; nil when none does.
func poolHold(in policies.WaitInput) *verdict {
	reason, message, held := policies.First(policies.Holds(), in)
	if !held {
		return nil
	}
	return &verdict{reason: reason, message: message}
}

// decide makes the reconcile's one admission decision: the pool-wide
// holds, then the plan within the budget, the canaries lowering it, a
// blocking query holding it, and the pods of each node whose turn comes
// passing it to the next; last, once the plan admits, whether the cache is
// behind (the CacheBehind hold). Blocking queries are asked only when they decide
// something, and before any node's pods: a pool a query holds lists no
// pods. A pool whose selector cannot be parsed has no nodes of its own to
// plan for, and a budget that cannot be resolved plans nothing unless a
// hold holds everything anyway.
func (r *Reconciler) decide(ctx context.Context, st *poolState) {
	a := &st.admission
	a.hold = poolHold(st.holdInput())
	if st.selectorErr != nil || a.hold == nil && a.budgetErr != nil {
		return
	}
	// A rollout's canaries lower the budget for admissions, not approvals.
	budget, passed, want, limited := canaryBudget(st, a.budget)
	pods, asked := podcheck.Pass{}, false
	q := st.queue()
	for {
		a.plan = plan.Admissions(st.views, q, st.counted(), budget, a.hold != nil, a.block.Blocks())
		if len(a.plan.Admit) == 0 {
			break
		}
		// Asked again when a node passed its turn to one the checks of a
		// node were not evaluated for (plan.Block.Covers).
		if len(st.pool.Spec.BlockingQueries) > 0 && (!asked || !a.block.Covers(st.pool, a.plan.Admit)) {
			asked = true
			if a.block = r.blocking(ctx, st); a.block.Blocks() {
				continue
			}
		}
		again, wake := r.passHeldByPods(ctx, st, &pods)
		st.wakeAt(wake)
		if !again {
			break
		}
	}
	a.plan.MaxUnavailable = a.budget
	if limited && plan.CanariesHold(a.plan, budget) {
		a.canaries = &policies.Canaries{Passed: passed, Want: want}
	}
	// Windows open and close with time, not with events: the pool looks
	// again when the next one opens if nodes wait for it, and asks its
	// blocking queries again once their answer is stale.
	if p := a.plan; p.OutsideWindow > 0 && !p.NextOpening.IsZero() {
		st.wakeAt(p.NextOpening)
	}
	if a.plan.BlockedByQuery > 0 {
		st.wakeAt(a.block.At.Add(r.BlockingQueryInterval))
	}
	// Once a node would be admitted to a control-plane pool, the guard
	// that reads the etcd members (controlplane.go); while it holds, the
	// nodes planned wait like the others.
	if len(a.plan.Admit) > 0 && st.guarded() {
		if a.quorum = r.quorumAtRisk(ctx, st, ""); a.quorum != "" {
			a.hold = poolHold(st.holdInput())
			a.plan = plan.Admissions(st.views, q, st.counted(), a.budget, true, false)
		}
	}
	// Last, once a node would be admitted, the hold that costs a read past
	// the cache (fresh.go): what the API server says fills its input, and
	// while it holds, the nodes planned wait like the others.
	if len(a.plan.Admit) > 0 && r.cacheBehind(ctx, st) != "" {
		a.hold = poolHold(st.holdInput())
		a.plan = plan.Admissions(st.views, q, st.counted(), a.budget, true, false)
		ctrl.LoggerFrom(ctx).Info("Admissions wait for the cache", "why", st.freshness.behind)
	}
}

// waitInput is what the pool's waiting nodes wait for, as the gate
// decided, for the turns (policies.Turns) that say it.
func (st *poolState) waitInput() policies.WaitInput {
	a := &st.admission
	p := a.plan
	in := st.holdBase()
	in.Windows = policies.WindowWait{
		// Nodes an opt-out holds wait whatever the windows say.
		Shut: p.OutsideWindow > 0 && p.OutsideWindow+p.OptedOut == p.Pending(),
		Next: p.NextOpening,
	}
	in.Budget = policies.Budget{Max: p.MaxUnavailable, Unavailable: st.unavailable(), Nodes: st.memberCount(), Pending: p.Pending(),
		Waiting: p.Waiting[:min(len(p.Waiting), plan.WaitingNamed)]}
	for _, v := range st.views {
		if len(v.Relabelled) > 0 {
			in.Budget.Relabelled = append(in.Budget.Relabelled, fmt.Sprintf("%s (labels: %s)", v.Node.Name, strings.Join(v.Relabelled, ", ")))
		}
	}
	for _, v := range st.views {
		for _, pr := range v.WindowProblems {
			if !slices.Contains(in.Windows.Problems, pr) {
				in.Windows.Problems = append(in.Windows.Problems, pr)
			}
		}
	}
	if p.BlockedByQuery > 0 {
		in.Blocking = &policies.Blocking{Reason: a.block.Reason, Message: a.block.Message}
	}
	in.Canaries = a.canaries
	st.addFreezes(&in)
	return in
}

// blockedBy is why the pool's waiting nodes wait, from the one decision:
// the pool-wide hold the planner acted on, else what the plan left them
// (policies.Turns, on in).
func (st *poolState) blockedBy(in policies.WaitInput) (reason, message string, blocked bool) {
	if h := st.admission.hold; h != nil {
		return h.reason, h.message, true
	}
	return policies.First(policies.Turns(), in)
}

// admit makes the admission decision (decide) and cordons each admitted
// node in one patch that also records the admission, then remembers the
// write until the cache has it. A budget that cannot be resolved admits
// nothing.
func (r *Reconciler) admit(ctx context.Context, st *poolState) error {
	r.decide(ctx, st)
	a := &st.admission
	if a.budgetErr != nil {
		return a.budgetErr
	}
	var errs []error
	for _, name := range a.plan.Admit {
		v := st.view(name)
		cur := v.Current()
		admission := protocol.Admission{BootID: cur.BootID, Requests: cur.IDs(), Time: st.now, Pool: st.pool.Name, PoolUID: st.pool.UID,
			View: st.freshness.nodes}
		if h := st.pool.Spec.Hooks; h != nil && len(h.BeforeDrain)+len(h.BeforeReboot)+len(h.AfterReboot) > 0 {
			admission.Sources, admission.Reasons = cur.Describe(admission.Requests)
		}
		var written *view.Node
		var err error
		if silenced(st.pool) {
			// Its silences first, its cordon after (silences.go).
			written, err = r.patchNode(ctx, st, v, true, protocol.AdmitUnsilenced(admission))
		} else {
			written, err = r.patchNode(ctx, st, v, true, protocol.Admit(admission))
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		node := written.Node
		r.inflight.add(name, node.ResourceVersion, st.now)
		r.Metrics.Admitted(st.pool.Name)
		ctrl.LoggerFrom(ctx).Info("Node admitted", "node", name, "bootID", admission.BootID, "requests", admission.Requests)
		then := "cordoned and draining"
		if silenced(st.pool) {
			then = "its silences first, then cordoned and drained"
		}
		r.events.Node(st.pool, node, corev1.EventTypeNormal, "Admitted", "Admit",
			"Node %s admitted for reboot (%d of %d unavailable); %s", name, st.unavailable(), a.budget, then)
		if o := v.Overridden; o != nil {
			r.events.Both(st.pool, node, corev1.EventTypeWarning, v1alpha1.PodOptOutOverriddenReason, "Admit",
				"%s; held since %s, past the pool's podOptOuts.maxHold (%s): admitted as its afterMaxHold (%s) says",
				o.Message, v.Held.Since.UTC().Format(time.RFC3339), st.pool.Spec.PodOptOuts.MaxHold.Duration, v1alpha1.PodHoldAdmit)
		}
	}
	return errors.Join(errs...)
}
