package gate

import (
	"context"
	"time"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/operator/gate/view"
	"github.com/kmaint/kmaint/operator/hooks"
)

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
	d, err := r.hooks.ApplyAt(ctx, r.hookTeller, hooksAt(st, v, d.Record.Point), d, hooks.NodeRecord{
		Write: func(rec *protocol.HookRecord) error {
			_, err := r.patchNode(ctx, st, st.view(name), true, protocol.WriteHooks(rec))
			return err
		},
		Current: hooks.RecordCurrent(ctx, r.apiReader, v.Node),
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
func (st *poolState) drainStart(v *view.Node) time.Time {
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
func drainedForHooks(v *view.Node) bool {
	return v.Hook != nil && v.Hook.Point == protocol.BeforeReboot && v.Admission != nil &&
		v.Hook.Token == v.HookTokenAt(protocol.BeforeReboot, v.Admission.BootID)
}
