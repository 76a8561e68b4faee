package gate

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/operator/gate/drainstep"
	"github.com/kmaint/kmaint/operator/gate/plan"
	"github.com/kmaint/kmaint/operator/gate/view"
	"github.com/kmaint/kmaint/operator/hooks"
	"github.com/kmaint/kmaint/operator/metrics"
	"github.com/kmaint/kmaint/operator/poolnodes"
)

// The drain stage: for every admitted, unapproved node it gathers the
// facts (drainFacts), decides the node's one step (drainstep.Decide, a
// pure function) and takes it (act): at most one node write, a protocol
// transition, then what the write tells (a log line, events, metrics).
// Two steps write more than once: the hook runner beginning an attempt
// (the record before the Job, its handle after it, invariant 5), and a
// forced drain, which records the pods it deletes before it deletes them
// and is approved in the reconcile that forced it.

// drain is the drain stage. The drains step outside the reconcile
// (drain.Steps) and wake the pool; it returns when to come back at the
// latest while they run, or when a node's next drain attempt may start.
func (r *Reconciler) drain(ctx context.Context, st *poolState) (time.Duration, error) {
	var requeue time.Duration
	soonest := func(d time.Duration) {
		if d > 0 && (requeue == 0 || d < requeue) {
			requeue = d
		}
	}
	var errs []error
	mayApprove, used := plan.Approvable(st.views, st.counted(), st.admission.budget)
	following := map[string]bool{}
	for _, v := range st.views {
		if v.InBackoff {
			// It waits for its next drain attempt, unadmitted: the pool's
			// Draining condition says so, and the pool looks again when
			// the attempt may start.
			retrying := v.Retrying()
			st.drains[v.Node.Name] = drainstep.Report{Blocked: true, Message: retrying.Waiting()}
			soonest(max(retrying.NextAt.Sub(st.now), time.Second))
			continue
		}
		// A node whose annotations cannot be read is never approved: what
		// its admission stands for cannot be told.
		if !v.Draining() || v.Admission.BootID == "" || v.Unreadable != nil {
			continue
		}
		f, followed, err := r.drainFacts(ctx, st, v, mayApprove[v.Node.Name], used)
		following[v.Node.Name] = followed
		if err != nil {
			errs = append(errs, err)
			continue
		}
		step := drainstep.Decide(f)
		soonest(step.Requeue)
		errs = append(errs, r.act(ctx, st, v, step, f))
	}
	r.steps.StopOthers(st.pool.Name, following)
	return requeue, errors.Join(errs...)
}

// drainFacts gathers what decides the node's step: reading its hooks'
// attempts and following its drain, which steps it outside the reconcile
// (followed), only as far as the node may go: nothing is evicted before
// the pool's marks are on it and its beforeDrain hooks passed.
func (r *Reconciler) drainFacts(ctx context.Context, st *poolState, v *view.Node, mayApprove bool, used int) (f drainstep.Facts, followed bool, err error) {
	m := st.pool.Spec.NodeMarking
	f = drainstep.Facts{Node: v.Node.Name, Now: st.now, Opts: st.pool.Spec.Drain,
		Admission: *v.Admission, Requests: v.Admission.Requests, Forced: forcedThisAdmission(v),
		Cordoned: v.Unschedulable, Marked: v.Marks != nil || len(m.DuringLabels()) == 0 && len(m.DuringTaints()) == 0, Marking: m,
		AtBeforeReboot: drainedForHooks(v), DrainStart: drainStart(v), RebootHooksPassed: hookPassedAt(v, protocol.BeforeReboot),
		Retrying: v.Retrying(), MayApprove: mayApprove, Used: used, Budget: st.admission.budget}
	f.Admission.View = st.freshness.nodes
	f.SilencesWait, f.SilencesUnavailable = silencesWait(st.pool, v)
	if cur := v.Current(); cur != nil && cur.BootID == v.Admission.BootID {
		f.Requests, f.BootCurrent = cur.IDs(), true
	}
	if !f.Marked {
		f.MarkingProblem = drainstep.MarkingProblem(m)
		if c := meta.FindStatusCondition(st.pool.Status.Conditions, v1alpha1.DrainingCondition); c != nil {
			f.DrainingSays = c.Message
		}
	}
	if !f.Cordoned || !f.Marked {
		return f, false, nil
	}
	key := drain.KeyOf(v.Node.Name, v.Admission.BootID, v.Admission.Time)
	follow := func(key drain.Key) {
		f.Last, f.Stepped = r.steps.Follow(key, st.pool.Name, st.pool.Spec.Drain)
		followed = true
	}
	if f.AtBeforeReboot {
		d, err := r.hookDecision(ctx, st, v, protocol.BeforeReboot)
		if err != nil {
			return f, false, err
		}
		f.RebootHooks = &d
		// Once they passed, the drain taken again after them: its steps
		// all begin after they passed.
		if d.Outcome() == hooks.OutcomePassed {
			key = key.AfterHooks()
		}
		follow(key)
		return f, followed, nil
	}
	d, err := r.hookDecision(ctx, st, v, protocol.BeforeDrain)
	if err != nil || d.Outcome() != hooks.OutcomePassed {
		f.DrainHooks = &d
		return f, false, err
	}
	f.DrainHooks = &d
	follow(key)
	if drained := f.Stepped && f.Last.Err == nil && f.Last.Progress.Done; drained && mayApprove && !f.Last.Stale && !d.Acts() {
		d, err := r.hookDecision(ctx, st, v, protocol.BeforeReboot)
		if err != nil {
			return f, followed, err
		}
		f.RebootHooks = &d
	}
	return f, followed, nil
}

// act takes the node's step: what the pool's Draining condition says of
// it, its one write (Step.Write, a protocol transition), and what the
// write tells. The hook runner writes where the node stands itself
// (applyHooks), and a forced drain records its pods before it approves
// (force).
func (r *Reconciler) act(ctx context.Context, st *poolState, v *view.Node, step drainstep.Step, f drainstep.Facts) error {
	if step.StopSteps {
		r.steps.Stop(v.Node.Name)
	}
	if step.Report != nil {
		st.drains[v.Node.Name] = *step.Report
	}
	switch step.Action {
	case drainstep.RunHooks:
		return r.applyHooks(ctx, st, v, *step.Hooks)
	case drainstep.ApproveNode, drainstep.ForceDrain:
		if behind := r.cacheBehind(ctx, st); behind != "" {
			// Approved from a stale budget, it could take the pool past a
			// lowered one: it waits, drained, for the next reconcile.
			// Forcing approves: nothing is deleted before it may.
			waits := "drained; its approval waits: "
			if step.Action == drainstep.ForceDrain {
				waits = "past its deadline; forcing it waits: "
			}
			st.drains[v.Node.Name] = drainstep.Report{Blocked: true, Message: waits + behind}
			return nil
		}
		if st.guarded() {
			if risk := r.quorumAtRisk(ctx, st, v.Node.Name); risk != "" {
				// Asked again before each approval: the cluster may have
				// lost a member since the node was admitted.
				st.drains[v.Node.Name] = drainstep.Report{Blocked: true, Message: "drained; its approval waits: " + risk}
				return nil
			}
		}
		if step.Action == drainstep.ForceDrain {
			return r.force(ctx, st, v, f)
		}
	}
	hook, node := v.Hook, v.Node
	if step.Write != nil {
		if _, err := r.patchNode(ctx, st, v, true, step.Write); err != nil {
			return err
		}
	}
	logStep(ctx, step, f)
	r.tell(st, node, step.Events, step.Metric)
	if step.Action == drainstep.ReleaseForHook {
		// The hook's attempts that may still run are stopped after the
		// write.
		return r.hooks.Stop(ctx, hook)
	}
	return nil
}

// tell tells what a step did to node: its events, on the node and the
// pool, and its metric (nil: none).
func (r *Reconciler) tell(st *poolState, node *corev1.Node, events []drainstep.Event, metric *metrics.DrainEnd) {
	for _, e := range events {
		r.events.Both(st.pool, node, e.Type, e.Reason, e.Action, "%s", e.Message)
	}
	if metric != nil {
		r.Metrics.DrainEnded(st.pool.Name, *metric)
	}
}

// logStep logs the node write a step made.
func logStep(ctx context.Context, step drainstep.Step, f drainstep.Facts) {
	log := ctrl.LoggerFrom(ctx)
	switch d := step.Deadline; step.Action {
	case drainstep.MarkNode:
		log.Info("Node marked for its reboot", "node", f.Node)
	case drainstep.ReleaseForHook:
		log.Info("Released for a failed hook", "node", f.Node, "message", step.Message)
	case drainstep.RetryDrain:
		log.Info("Drain to be retried", "node", f.Node, "attempt", d.Attempts, "maxAttempts", d.MaxAttempts, "nextAt", d.NextAt)
	case drainstep.AbandonDrain:
		log.Info("Drain abandoned", "node", f.Node, "timeout", f.Timeout(), "message", step.Message)
	case drainstep.ApproveNode:
		log.Info("Reboot approved", "node", f.Node, "bootID", f.Admission.BootID, "forced", f.Forced)
	}
}

// force deletes the pods eviction could not move (once act found the
// cache current), recording them on the
// node first, and then takes the node on as drained, in the same
// reconcile: to its beforeReboot hooks, or to its approval when it has
// none (or they passed already: a drain taken again after them was
// forced). Only a forcing that ended is taken on: the record of one that
// failed midway says which pods it named, not that they are gone. A
// forced drain lets a node past nothing else: approved straight away, it
// skipped the work its beforeReboot hooks were for. The record names the
// boot and requests, so that the NodeMaintenance controller tells the
// request it was forced whenever it looks, before or after the reboot.
func (r *Reconciler) force(ctx context.Context, st *poolState, v *view.Node, f drainstep.Facts) error {
	forcing := protocol.DrainForcing{BootID: v.Admission.BootID, Requests: v.Admission.Requests, Time: st.now, Timeout: f.Timeout().String()}
	// A forcing of this admission, recorded by a reconcile that then failed,
	// keeps the pods it named.
	if forcedThisAdmission(v) {
		forcing = *v.DrainForced
	}
	record := func(pods []string) error {
		forcing.AddPods(pods)
		written, err := r.patchNode(ctx, st, v, true, protocol.RecordForcing(forcing))
		if err == nil {
			v = written
		}
		return err
	}
	if _, err := r.Drainer.Force(ctx, v.Node.Name, st.pool.Spec.Drain, record); err != nil {
		return fmt.Errorf("force drain of node %s: %w", v.Node.Name, err)
	}
	if !forcedThisAdmission(v) {
		// Nothing was left to delete: the record still says the drain
		// was forced, and when.
		if err := record(nil); err != nil {
			return err
		}
	}
	ctrl.LoggerFrom(ctx).Info("Drain forced", "node", v.Node.Name, "timeout", f.Timeout(), "deleted", forcing.Pods)
	r.tell(st, v.Node, []drainstep.Event{{Type: corev1.EventTypeWarning, Reason: v1alpha1.DrainForcedReason, Action: "Drain",
		Message: forcing.Message(v.Node.Name)}}, &metrics.DrainEnd{Forced: true, ForcedPods: len(forcing.Pods) + forcing.MorePods})
	// Forcing is only taken when the approval fits the budget.
	d, err := r.hookDecision(ctx, st, v, protocol.BeforeReboot)
	if err != nil {
		return err
	}
	f.RebootHooks, f.Forced = &d, true
	return r.act(ctx, st, v, drainstep.DecideBeforeReboot(f, false), f)
}

// forcedThisAdmission reports whether the node's forced-drain record is
// that of its current admission.
func forcedThisAdmission(v *view.Node) bool {
	f := v.DrainForced
	return f != nil && f.BootID == v.Admission.BootID && !f.Time.Before(v.Admission.Time)
}

// hookDecision is where the node stands in its pool's hooks at point
// before its reboot, for its admitted boot (hooks.Runner.DecideAt): the
// kinds observe each attempt; nothing is written.
func (r *Reconciler) hookDecision(ctx context.Context, st *poolState, v *view.Node, point protocol.HookPoint) (hooks.Decision, error) {
	return r.hooks.DecideAt(ctx, hooksAt(st, v, point))
}

// applyHooks does what the runner's decision at point asks: each write of
// where the node stands goes through patchNode, so that the later phases
// and the status see it.
func (r *Reconciler) applyHooks(ctx context.Context, st *poolState, v *view.Node, d hooks.Decision) error {
	name := v.Node.Name
	d, err := r.hooks.ApplyAt(ctx, r.hookTeller, hooksAt(st, v, d.Record.Point), d, func(rec *protocol.HookRecord) error {
		_, err := r.patchNode(ctx, st, st.view(name), true, protocol.WriteHooks(rec))
		return err
	})
	if err != nil {
		return err
	}
	st.wakeAt(d.Wake)
	return nil
}

// hooksAt is the node at point before its reboot.
func hooksAt(st *poolState, v *view.Node, point protocol.HookPoint) hooks.At {
	return hooks.At{Pool: st.pool, Node: v.NodeState, Point: point, BootID: v.Admission.BootID, Now: st.now}
}

// hookPassedAt is when the node passed its hooks at point (before its
// reboot) for its admission, from when a drain after them is timed: the
// last hook's pass. Zero when it is not at the point, or no pass is
// recorded (the pool's hooks there were removed).
func hookPassedAt(v *view.Node, point protocol.HookPoint) time.Time {
	if v.Hook == nil || v.Hook.Point != point || v.Admission == nil || v.Hook.Token != v.HookTokenAt(point, v.Admission.BootID) {
		return time.Time{}
	}
	var last time.Time
	for _, h := range v.Hook.Hooks {
		if h.Passed.After(last) {
			last = h.Passed
		}
	}
	return last
}

// drainStart is when the node's drain began: at its admission, or once
// its beforeDrain hooks passed.
func drainStart(v *view.Node) time.Time {
	start := v.Admission.Time
	if rec := v.Silences; rec.For(admitted(v)) {
		// Its cordon waited for its silences: its drain began after.
		if t := rec.SettledAt(); t.After(start) {
			start = t
		}
	}
	if t := hookPassedAt(v, protocol.BeforeDrain); t.After(start) {
		return t
	}
	return start
}

// drainedForHooks reports whether the node reached its beforeReboot hooks
// for its admission: its drain was done. It goes on stepping while the
// node waits there (drain), so that a pod that lands on it meanwhile (one
// that tolerates the cordon, or is bound to the node by name) is evicted
// before the reboot, its PodDisruptionBudget holding.
func drainedForHooks(v *view.Node) bool {
	return v.Hook != nil && v.Hook.Point == protocol.BeforeReboot && v.Admission != nil &&
		v.Hook.Token == v.HookTokenAt(protocol.BeforeReboot, v.Admission.BootID)
}

// patchNode applies a protocol transition to the node (poolnodes.Patch)
// and puts the node as written back into the state, so that later phases and
// the status see the write; it returns the node's view as written. Every
// phase writes through it; it stands with the drain stage, which writes
// most.
func (r *Reconciler) patchNode(ctx context.Context, st *poolState, v *view.Node, lock bool, t protocol.Transition) (*view.Node, error) {
	node, err := poolnodes.Patch(ctx, r.Client, v.Node, lock, t)
	if err != nil {
		return nil, err
	}
	if written := st.replace(node); written != nil {
		return written, nil
	}
	// A node the phases did not find among the views (none writes one):
	// its view as written all the same.
	written := *v
	written.NodeState = view.Read(node).NodeState
	return &written, nil
}
