package aftercare

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/operator/hooks"
	"github.com/kmaint/kmaint/operator/poolnodes"
)

// complete completes the reboot of a node that is back from it (a new boot
// ID, Ready) and whose daemon confirmed it (protocol.NodeState.RebootDone),
// once its pool's afterReboot hooks let it: one patch uncordons what kmaint
// cordoned, unmarks it, frees its slot and, in a guarded pool, writes its
// settle record, so that no crash can leave a node uncordoned with its
// approval, or the reverse, or free the slot of a node that has not
// settled (invariant 5).
func (r *Reconciler) complete(ctx context.Context, st *poolState, m poolnodes.Member) error {
	outcome, err := r.afterReboot(ctx, st, m)
	if err != nil || outcome == hooks.OutcomeWaiting || outcome == hooks.OutcomeHalted {
		// Back, still cordoned, in its slot: its afterReboot hooks decide
		// when it is completed (hooks.OutcomeReleased completes it as it
		// is, as the hook's failure said).
		return err
	}
	m = st.member(m.Node.Name)
	approved := m.Approved
	if err := r.patchNode(ctx, st, m, protocol.Complete(st.pool.Spec.NodeMarking, protocol.SettleOnCompletion(st.pool, m.NodeState, st.now))); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Reboot completed", "node", m.Node.Name, "bootID", m.BootID, "settle", st.pool.Spec.Guarded())
	r.events.Node(st.pool, m.Node, corev1.EventTypeNormal, "RebootCompleted", "Complete",
		"Node %s is back and Ready with boot %s (approved for boot %s)", m.Node.Name, m.BootID, approved)
	return nil
}

// afterReboot runs the pool's afterReboot hooks for the node's new boot
// (hooks.Runner.RunAt): each write of where the node stands is a patch of
// its own, put back into the state.
func (r *Reconciler) afterReboot(ctx context.Context, st *poolState, m poolnodes.Member) (hooks.Outcome, error) {
	name := m.Node.Name
	at := hooks.At{Pool: st.pool, Node: m.NodeState, Point: protocol.AfterReboot, BootID: m.BootID, Now: st.now}
	d, err := r.hooks.RunAt(ctx, r.hookTeller, at, func(rec *protocol.HookRecord) error {
		return r.patchNode(ctx, st, st.member(name), protocol.WriteHooks(rec))
	})
	if err != nil {
		return hooks.OutcomeWaiting, err
	}
	st.wakeAt(d.Wake)
	return d.Outcome(), nil
}
