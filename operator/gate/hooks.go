package gate

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/operator/hooks"
)

// atHooks runs the pool's hooks at point for the node (hooks.Runner.RunAt)
// before its reboot, for its admitted boot: each write of where the node
// stands goes through patchNode, so that the later phases and the status
// see it.
func (r *Reconciler) atHooks(ctx context.Context, st *poolState, v *nodeView, point protocol.HookPoint) (hooks.Outcome, error) {
	name := v.Node.Name
	at := hooks.At{Pool: st.pool, Node: v.NodeState, Point: point, BootID: v.Admission.BootID, Now: st.now}
	d, err := r.hooks.RunAt(ctx, r.hookTeller, at, func(rec *protocol.HookRecord) error {
		_, err := r.patchNode(ctx, st, st.view(name), true, protocol.WriteHooks(rec))
		return err
	})
	if err != nil {
		return hooks.OutcomeWaiting, err
	}
	st.wakeAt(d.Wake)
	return d.Outcome(), nil
}

// hookPassedAt is when the node passed its hooks at point (before its
// reboot) for its admission, from when a drain after them is timed: the
// last hook's pass. Zero when it is not at the point, or no pass is
// recorded (the pool's hooks there were removed).
func hookPassedAt(v *nodeView, point protocol.HookPoint) time.Time {
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
func (st *poolState) drainStart(v *nodeView) time.Time {
	if t := hookPassedAt(v, protocol.BeforeDrain); t.After(v.Admission.Time) {
		return t
	}
	return v.Admission.Time
}

// drainedForHooks reports whether the node reached its beforeReboot hooks
// for its admission: its drain was done. It goes on stepping while the
// node waits there (drain), so that a pod that lands on it meanwhile (one
// that tolerates the cordon, or is bound to the node by name) is evicted
// before the reboot, its PodDisruptionBudget holding.
func drainedForHooks(v *nodeView) bool {
	return v.Hook != nil && v.Hook.Point == protocol.BeforeReboot && v.Admission != nil &&
		v.Hook.Token == v.HookTokenAt(protocol.BeforeReboot, v.Admission.BootID)
}

// beforeReboot runs the beforeReboot hooks of a drained node, and approves
// its reboot once they passed, its approval fits the budget, and, if it
// waited at them (waited; not when its drain ended in this pass), once a
// drain taken again after they passed finds it drained: a hook may take
// minutes, and a pod that landed meanwhile (one that tolerates the cordon,
// or is bound to the node by name) is evicted before the reboot, its
// PodDisruptionBudget holding, not killed by it. While the node waits at
// its hooks its drain goes on, and evicts such pods as they land.
func (r *Reconciler) beforeReboot(ctx context.Context, st *poolState, v *nodeView, mayApprove bool, used int, waited bool) error {
	outcome, err := r.atHooks(ctx, st, v, protocol.BeforeReboot)
	if err != nil {
		return err
	}
	v = st.view(v.Node.Name)
	var redrain *drainReport
	var last drain.StepResult
	if waited {
		key := drain.KeyOf(v.Node.Name, v.Admission.BootID, v.Admission.Time)
		if outcome == hooks.OutcomePassed {
			key = key.AfterHooks()
		}
		var stepped bool
		last, stepped = r.steps.Follow(key, st.pool.Name, st.pool.Spec.Drain)
		if outcome == hooks.OutcomePassed {
			redrain = redrainReport(last, stepped)
		}
	}
	timeout := drainTimeout(st.pool)
	switch {
	case outcome != hooks.OutcomePassed:
		return r.heldByHooks(ctx, st, v, outcome)
	case redrain != nil && pastDeadlineAfterHooks(v, last, st.now, timeout):
		// The drain after the hooks is a drain like the first: the pool's
		// timeout, counted from when they passed, and drain.onTimeout.
		r.steps.Stop(v.Node.Name)
		return r.atDeadline(ctx, st, v, timeout, last.Progress, last.Err, mayApprove)
	case !mayApprove:
		st.drains[v.Node.Name] = drainReport{blocked: true, message: fmt.Sprintf(
			"drained and its beforeReboot hooks passed; its approval waits: %d nodes count against a maxUnavailable of %d", used, st.admission.budget)}
		return nil
	case redrain != nil:
		st.drains[v.Node.Name] = drainReport{blocked: redrain.blocked,
			message: "its beforeReboot hooks passed; its approval waits for the drain to find it drained again: " + redrain.message}
		return nil
	}
	return r.approve(ctx, st, v, forcedRecord(v))
}

// pastDeadlineAfterHooks reports whether the drain taken again after the
// node's beforeReboot hooks passed is past the pool's timeout, counted from
// their last pass. Only a step's finding is past it: a drain whose first
// step is under way is not. A node whose hooks were taken out of its pool
// while it waited has no passes recorded: the record goes, and from the
// next pass on its drain is the first one again, timed from its admission.
func pastDeadlineAfterHooks(v *nodeView, last drain.StepResult, now time.Time, timeout time.Duration) bool {
	passed := hookPassedAt(v, protocol.BeforeReboot)
	return !last.At.IsZero() && !passed.IsZero() && now.Sub(passed) >= timeout
}

// redrainReport is nil when the drain's last step, taken a moment ago,
// found the node drained; else it says where the drain stands.
func redrainReport(last drain.StepResult, stepped bool) *drainReport {
	switch {
	case !stepped:
		return &drainReport{message: "its first step is under way"}
	case last.Err == nil && last.Progress.Done && last.Stale:
		return &drainReport{message: "looking once more"}
	case last.Err == nil && last.Progress.Done:
		return nil
	}
	rep := report(last.Progress, last.Err)
	return &rep
}

// heldByHooks reports a node its hooks hold before its reboot, in the
// pool's Draining condition, and releases one whose hook's failure lets it
// go: uncordoned, its requests failed with the hook's reason (as an
// abandoned drain fails them), so that they are not admitted again.
func (r *Reconciler) heldByHooks(ctx context.Context, st *poolState, v *nodeView, outcome hooks.Outcome) error {
	msg := "its hooks have not passed"
	if v.Hook != nil {
		msg = v.Hook.Describe()
	}
	if outcome != hooks.OutcomeReleased {
		st.drains[v.Node.Name] = drainReport{message: msg, blocked: outcome == hooks.OutcomeHalted}
		return nil
	}
	failure := protocol.DrainFailure{BootID: v.Admission.BootID, Requests: v.Admission.Requests, Time: st.now, Reason: v1alpha1.HookFailedReason, Message: msg}
	if cur := v.Current(); cur != nil && cur.BootID == v.Admission.BootID {
		failure.Requests = cur.IDs()
	}
	r.steps.Stop(v.Node.Name)
	rec := v.Hook
	if _, err := r.patchNode(ctx, st, v, true, protocol.Abandon(failure)); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Released for a failed hook", "node", v.Node.Name, "message", msg)
	return r.hooks.Stop(ctx, rec)
}
