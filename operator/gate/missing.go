package gate

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/operator/api/protocol"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
)

// defaultDaemonConfirmTimeout is how long the gate waits, by default, for
// the daemon of a node back from its reboot. A daemon that comes back at all
// does within a minute or two (its pod restarts with the node, its image is
// cached); ten minutes also covers a daemon pod whose first starts crash
// (the kubelet's back-off reaches five minutes) and a slow registry, and is
// short beside the hours a node would otherwise stay cordoned in the budget.
const defaultDaemonConfirmTimeout = 10 * time.Minute

// daemonStep is what the gate does about a node that is back from its
// approved reboot while its daemon has not confirmed it.
type daemonStep int

const (
	// startDaemonWait records when the node was first seen back, so that
	// the wait is bounded whatever restarts.
	startDaemonWait daemonStep = iota
	// keepWaitingForDaemon: the bound has not passed yet.
	keepWaitingForDaemon
	// completeWithoutDaemon: the bound has passed; the gate completes what
	// it can prove (a new boot ID, Ready) without the daemon.
	completeWithoutDaemon
)

// decideDaemonWait decides about a node for which AwaitingDaemon holds, and
// when to look again while it waits.
func decideDaemonWait(s protocol.NodeState, now time.Time, bound time.Duration) (daemonStep, time.Time) {
	m := s.UnconfirmedFor()
	if m == nil {
		return startDaemonWait, now.Add(bound)
	}
	if deadline := m.Since.Add(bound); now.Before(deadline) {
		return keepWaitingForDaemon, deadline
	}
	return completeWithoutDaemon, time.Time{}
}

// awaitDaemon bounds the wait for the daemon of a node back from its
// approved reboot. Past the bound the reboot is completed as RebootDone
// completes it, except that RebootUnconfirmed stays on the node: the daemon's
// reboot-requested still names the approved boot, which is no longer the
// node's, so it is never admitted again for it, and a daemon that comes back
// later finds no request in its new boot and clears it.
func (r *Reconciler) awaitDaemon(ctx context.Context, st *poolState, v nodeView) error {
	step, wakeAt := decideDaemonWait(v.NodeState, st.now, r.DaemonConfirmTimeout)
	st.wakeAt(wakeAt)
	switch step {
	case startDaemonWait:
		back := protocol.UnconfirmedReboot{ApprovedBoot: v.Approved, BootID: v.BootID, Since: st.now}
		_, err := r.patchNode(ctx, st, v, true, func(n *corev1.Node) {
			n.Annotations[protocol.RebootUnconfirmed] = protocol.Encode(back)
		})
		return err
	case keepWaitingForDaemon:
		return nil
	}
	unconfirmed := *v.Unconfirmed
	if _, err := r.patchNode(ctx, st, v, true, func(n *corev1.Node) {
		delete(n.Annotations, protocol.RebootApproved)
		delete(n.Annotations, protocol.Admitted)
		delete(n.Annotations, protocol.DrainFailed)
		delete(n.Annotations, protocol.NodeNotBack)
		delete(n.Annotations, protocol.DrainRetry)
		uncordonIfOurs(n)
		addAfterLabels(n, st.pool.Spec.NodeMarking)
		if s, ok := settleOnCompletion(st, v); ok {
			n.Annotations[protocol.Settling] = protocol.Encode(s)
		}
	}); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Reboot completed without the daemon", "node", v.Node.Name, "bootID", v.BootID,
		"approvedBoot", unconfirmed.ApprovedBoot, "waited", r.DaemonConfirmTimeout)
	r.event(st, v.Node, corev1.EventTypeWarning, v1alpha1.DaemonMissingReason, "Complete",
		"Node %s is back and Ready with boot %s (approved for boot %s), and its daemon has not confirmed the reboot within %s: "+
			"reboot completed without it, slot freed, uncordoned if kmaint cordoned it. Is kmaint-daemon running on the node?",
		v.Node.Name, v.BootID, unconfirmed.ApprovedBoot, r.DaemonConfirmTimeout)
	return nil
}

// forgetUnconfirmed removes RebootUnconfirmed once the daemon is back.
func (r *Reconciler) forgetUnconfirmed(ctx context.Context, st *poolState, v nodeView) error {
	_, err := r.patchNode(ctx, st, v, true, func(n *corev1.Node) {
		delete(n.Annotations, protocol.RebootUnconfirmed)
	})
	if err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Daemon is back", "node", v.Node.Name, "bootID", v.BootID)
	return nil
}

// wakeAt asks for a reconcile at t at the latest; zero asks nothing.
func (st *poolState) wakeAt(t time.Time) {
	if !t.IsZero() && (st.wake.IsZero() || t.Before(st.wake)) {
		st.wake = t
	}
}
