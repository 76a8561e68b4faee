package gate

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/operator/gate/plan"
	"github.com/kmaint/kmaint/operator/gate/view"
	"github.com/kmaint/kmaint/operator/hooks"
	"github.com/kmaint/kmaint/operator/poolnodes"
)

// defaultDrainTimeout applies when a pool leaves drain.timeout unset, as the
// built-in default pool does.
const defaultDrainTimeout = 10 * time.Minute

// patchNode applies a protocol transition to the node (poolnodes.Patch)
// and puts the node as written back into the state, so that later phases and
// the status see the write.
func (r *Reconciler) patchNode(ctx context.Context, st *poolState, v *view.Node, lock bool, t protocol.Transition) (*corev1.Node, error) {
	node, err := poolnodes.Patch(ctx, r.Client, v.Node, lock, t)
	if err != nil {
		return nil, err
	}
	st.replace(node)
	return node, nil
}

// syncDesiredConfig writes the pool's desiredConfig to its nodes. Nodes that
// two pools select get none: no pool owns them.
func (r *Reconciler) syncDesiredConfig(ctx context.Context, st *poolState) error {
	want := st.pool.Spec.DesiredConfig
	var errs []error
	started := false
	for _, v := range st.views {
		// Read from the annotation: with want set, equal means it is there;
		// with none wanted, absent or empty is the same.
		if len(v.OtherPools) > 0 || v.DesiredConfig == want {
			continue
		}
		_, err := r.patchNode(ctx, st, v, false, protocol.SetDesiredConfig(want))
		errs = append(errs, err)
		started = started || err == nil && want != "" && v.CurrentConfig != want
	}
	if started && st.pool.UID != "" {
		// The quiet members not among the views are in no other pool.
		outdated := st.quiet().Nodes - st.quiet().Current
		for _, v := range st.views {
			if len(v.OtherPools) == 0 && v.CurrentConfig != want {
				outdated++
			}
		}
		r.status.RolloutStarted(ctx, st.pool, outdated, st.memberCount())
	}
	return errors.Join(errs...)
}

// releaseVoid releases admissions that no longer stand for a request
// (protocol.NodeState.AdmissionVoid), freeing their slots: the node
// rebooted by other means, or its requests are gone. The release is one
// patch, and the Jobs of its hooks are stopped after it. What comes after
// an approved reboot is aftercare's.
func (r *Reconciler) releaseVoid(ctx context.Context, st *poolState) error {
	var errs []error
	for _, v := range st.views {
		if !v.AdmissionVoid() {
			continue
		}
		rec := v.Hook
		if _, err := r.patchNode(ctx, st, v, true, protocol.Release()); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, r.hooks.Stop(ctx, rec))
		r.events.Node(st.pool, v.Node, corev1.EventTypeNormal, "AdmissionReleased", "Release",
			"Node %s no longer requests a reboot of the admitted boot; released before approval", v.Node.Name)
	}
	return errors.Join(errs...)
}

// drain is the drain stage: for every admitted, unapproved node it
// gathers its facts (drainFacts: the hook runner's decision at the point
// it reached, its drain's last step, the budget), decides its one step
// (decideDrain) and takes it (act). The drains step outside the reconcile
// (drain.Steps) and wake the pool; it returns when to come back at the
// latest while they run.
func (r *Reconciler) drain(ctx context.Context, st *poolState) (time.Duration, error) {
	reportBackoff(st)
	var requeue time.Duration
	var errs []error
	mayApprove, used := plan.Approvable(st.views, st.counted(), st.admission.budget)
	following := map[string]bool{}
	for _, v := range st.views {
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
		step := decideDrain(f)
		if step.requeue > 0 && (requeue == 0 || step.requeue < requeue) {
			requeue = step.requeue
		}
		errs = append(errs, r.act(ctx, st, v, step, f))
	}
	r.steps.StopOthers(st.pool.Name, following)
	return requeue, errors.Join(errs...)
}

// drainFacts gathers what decides the node's step: reading its hooks'
// attempts and following its drain, which steps it outside the reconcile
// (followed), only as far as the node may go: nothing is evicted before
// the pool's marks are on it and its beforeDrain hooks passed.
func (r *Reconciler) drainFacts(ctx context.Context, st *poolState, v *view.Node, mayApprove bool, used int) (f drainFacts, followed bool, err error) {
	m := st.pool.Spec.NodeMarking
	f = drainFacts{node: v.Node.Name, now: st.now, opts: st.pool.Spec.Drain, timeout: drainTimeout(st.pool), cordoned: v.Unschedulable,
		marked: v.Marks != nil || len(m.DuringLabels()) == 0 && len(m.DuringTaints()) == 0, atBeforeReboot: drainedForHooks(v),
		drainStart: st.drainStart(v), rebootHooksPassed: hookPassedAt(v, protocol.BeforeReboot), retrying: v.Retrying(), boot: v.Admission.BootID,
		mayApprove: mayApprove, used: used, budget: st.admission.budget}
	if !f.marked {
		f.markingProblem = markingProblem(st)
	}
	if !f.cordoned || !f.marked {
		return f, false, nil
	}
	key := drain.KeyOf(v.Node.Name, v.Admission.BootID, v.Admission.Time)
	follow := func(key drain.Key) {
		f.step, f.stepped = r.steps.Follow(key, st.pool.Name, st.pool.Spec.Drain)
		followed = true
	}
	if f.atBeforeReboot {
		d, err := r.hookDecision(ctx, st, v, protocol.BeforeReboot)
		if err != nil {
			return f, false, err
		}
		f.rebootHooks = &d
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
		f.drainHooks = &d
		return f, false, err
	}
	f.drainHooks = &d
	follow(key)
	if drained := f.stepped && f.step.Err == nil && f.step.Progress.Done; drained && mayApprove && !f.step.Stale && !d.Acts() {
		d, err := r.hookDecision(ctx, st, v, protocol.BeforeReboot)
		if err != nil {
			return f, followed, err
		}
		f.rebootHooks = &d
	}
	return f, followed, nil
}

// act takes the node's step in the drain stage: at most one node write, a
// protocol transition, with its log line, events and metrics, and what the
// pool's Draining condition says of the node.
func (r *Reconciler) act(ctx context.Context, st *poolState, v *view.Node, step drainStep, f drainFacts) error {
	name := v.Node.Name
	if step.stopSteps {
		r.steps.Stop(name)
	}
	if step.report != nil {
		st.drains[name] = *step.report
		if step.report.markingRefused {
			r.tellMarkingRefused(st, v, step.report.message)
		}
	}
	var err error
	switch step.action {
	case cordonAgain:
		_, err = r.patchNode(ctx, st, v, true, protocol.Recordon())
	case drainAgain:
		_, err = r.patchNode(ctx, st, v, true, protocol.Redrain())
	case markNode:
		if _, err = r.patchNode(ctx, st, v, true, protocol.Mark(st.pool.Spec.NodeMarking)); err == nil {
			ctrl.LoggerFrom(ctx).Info("Node marked for its reboot", "node", name)
		}
	case runHooks:
		err = r.applyHooks(ctx, st, v, *step.hooks)
	case releaseForHook:
		err = r.releaseForHook(ctx, st, v, step.message)
	case approveNode:
		err = r.approve(ctx, st, v, forcedRecord(v))
	case retryDrain:
		err = r.retry(ctx, st, v, step.deadline, step.message)
	case abandonDrain:
		err = r.abandon(ctx, st, v, f.timeout, step.message)
	case forceDrain:
		err = r.force(ctx, st, v, f)
	}
	return err
}

// drainTimeout is how long a drain of the pool may take (drain.timeout).
func drainTimeout(p *v1alpha1.MaintenancePool) time.Duration {
	if t := p.Spec.Drain.Timeout; t != nil && t.Duration > 0 {
		return t.Duration
	}
	return defaultDrainTimeout
}

// approve writes reboot-approved for the boot the requests were made in, the
// last step before the daemon reboots. forced is the forced drain that
// approves it, nil for a drain that finished; a forced drain's record stays
// on the node, an earlier one's goes.
func (r *Reconciler) approve(ctx context.Context, st *poolState, v *view.Node, forced *protocol.DrainForcing) error {
	if cur := v.Current(); cur == nil || cur.BootID != v.Admission.BootID {
		return nil // releaseVoid releases it on the next reconcile
	}
	if behind := r.cacheBehind(ctx, st); behind != "" {
		// Approved from a stale budget, it could take the pool past a
		// lowered one: it waits, drained, for the next reconcile.
		st.drains[v.Node.Name] = drainReport{blocked: true, message: "drained; its approval waits: " + behind}
		return nil
	}
	boot := v.Admission.BootID
	approval := *v.Admission
	approval.View = st.freshness.nodes
	if _, err := r.patchNode(ctx, st, v, true, protocol.Approve(approval, st.now, forced != nil)); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Reboot approved", "node", v.Node.Name, "bootID", boot, "forced", forced != nil)
	if forced != nil {
		r.events.Both(st.pool, v.Node, corev1.EventTypeNormal, "RebootApproved", "Approve",
			"Node %s's drain was forced; reboot approved for boot %s", v.Node.Name, boot)
		return nil
	}
	// A drain that finished gets no event: the daemon's Rebooting, on
	// the same node a moment later, tells a person the same, and the
	// NodeMaintenance's phase times say when the drain ended. One event
	// less per reboot is one write less in a rollout of thousands.
	r.Metrics.Drained(st.pool.Name, st.now.Sub(v.Admission.Time))
	return nil
}

// releaseForHook lets a node go before its reboot as its hook's failure
// says (msg): uncordoned, its requests failed with the hook's reason (as an
// abandoned drain fails them), so that they are not admitted again; the
// hook's attempts that may still run are stopped after the write.
func (r *Reconciler) releaseForHook(ctx context.Context, st *poolState, v *view.Node, msg string) error {
	failure := protocol.DrainFailure{BootID: v.Admission.BootID, Requests: v.Admission.Requests, Time: st.now, Reason: v1alpha1.HookFailedReason, Message: msg}
	if cur := v.Current(); cur != nil && cur.BootID == v.Admission.BootID {
		failure.Requests = cur.IDs()
	}
	rec := v.Hook
	if _, err := r.patchNode(ctx, st, v, true, protocol.Abandon(failure)); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Released for a failed hook", "node", v.Node.Name, "message", msg)
	return r.hooks.Stop(ctx, rec)
}

// abandon gives up a drain that ran past the pool's timeout: the node is
// uncordoned and unmarked if kmaint did those, and its current requests
// are marked as failed so the same requests do not start the same drain
// again.
func (r *Reconciler) abandon(ctx context.Context, st *poolState, v *view.Node, timeout time.Duration, msg string) error {
	failure := protocol.DrainFailure{BootID: v.Admission.BootID, Requests: v.Admission.Requests, Time: st.now, Reason: v1alpha1.DrainTimeoutReason, Message: msg}
	if cur := v.Current(); cur != nil && cur.BootID == v.Admission.BootID {
		failure.Requests = cur.IDs()
	}
	if _, err := r.patchNode(ctx, st, v, true, protocol.Abandon(failure)); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Drain abandoned", "node", v.Node.Name, "timeout", timeout, "message", msg)
	r.Metrics.DrainFailed(st.pool.Name, failure.Reason)
	r.events.Both(st.pool, v.Node, corev1.EventTypeWarning, v1alpha1.DrainFailedEventReason, "Drain", "%s", msg)
	return nil
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
		node, err := r.patchNode(ctx, st, v, true, protocol.Admit(admission))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r.inflight.add(name, node.ResourceVersion, st.now)
		r.Metrics.Admitted(st.pool.Name)
		ctrl.LoggerFrom(ctx).Info("Node admitted", "node", name, "bootID", admission.BootID, "requests", admission.Requests)
		r.events.Node(st.pool, node, corev1.EventTypeNormal, "Admitted", "Admit",
			"Node %s admitted for reboot (%d of %d unavailable); cordoned and draining", name, st.unavailable(), a.budget)
		if o := v.Overridden; o != nil {
			r.events.Both(st.pool, node, corev1.EventTypeWarning, v1alpha1.PodOptOutOverriddenReason, "Admit",
				"%s; held since %s, past the pool's podOptOuts.maxHold (%s): admitted as its afterMaxHold (%s) says",
				o.Message, v.Held.Since.UTC().Format(time.RFC3339), st.pool.Spec.PodOptOuts.MaxHold.Duration, v1alpha1.PodHoldAdmit)
		}
	}
	return errors.Join(errs...)
}
