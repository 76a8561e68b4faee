package aftercare

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/poolnodes"
)

// defaultNodeReturnTimeout is how long aftercare waits, by default, for a
// node approved to reboot to come back (a new boot ID, Ready) before it
// reports the node not back. A virtual machine is back in a minute or two;
// a large physical server spends up to ten in its firmware's checks. Fifteen
// covers those, and is short beside the hours a node could otherwise hold
// its pool's rollout with nobody told.
const defaultNodeReturnTimeout = 15 * time.Minute

// returnStep is what aftercare does about a node approved to reboot that is
// not back yet.
type returnStep int

const (
	// startReturnWait records when the wait began, for an approval written
	// before approvals said when they were made, or whose time lies too far
	// ahead to be believed.
	startReturnWait returnStep = iota
	// keepWaitingForReturn: the bound has not passed yet.
	keepWaitingForReturn
	// reportNotBack: the bound has passed and nobody was told yet.
	reportNotBack
	// stillNotBack: reported already; the node keeps its slot until it
	// comes back.
	stillNotBack
)

// decideReturnWait decides about a node for which AwaitingReturn holds, and
// when to look again while it waits.
func decideReturnWait(s protocol.NodeState, now time.Time, bound time.Duration) (returnStep, time.Time) {
	approvedAt := s.Admission.ApprovedAt
	// A time further ahead than any clock skew (written by hand, or by a
	// clock far off) would put the report off for as long: the wait starts
	// anew instead.
	if approvedAt.IsZero() || approvedAt.After(now.Add(v1alpha1.MaxClockSkew)) {
		return startReturnWait, now.Add(bound)
	}
	if deadline := approvedAt.Add(bound); now.Before(deadline) {
		return keepWaitingForReturn, deadline
	}
	if s.NotBackFor() != nil {
		return stillNotBack, time.Time{}
	}
	return reportNotBack, time.Time{}
}

// awaitReturn bounds the wait for a node approved to reboot. Past the bound
// the node stays as it is, approved, cordoned and in the budget (it really
// is unavailable, and may come back at any moment to complete as usual),
// and aftercare says so once: NodeNotBack on the node, a Warning event on
// the node and its pool, and from the annotation the pool's and the
// NodeMaintenance's Degraded conditions.
func (r *Reconciler) awaitReturn(ctx context.Context, st *poolState, v poolnodes.Member) error {
	step, wakeAt := decideReturnWait(v.NodeState, st.now, r.NodeReturnTimeout)
	st.wakeAt(wakeAt)
	switch step {
	case startReturnWait:
		err := r.patchNode(ctx, st, v, protocol.TimeReturn(*v.Admission, st.now))
		return err
	case keepWaitingForReturn, stillNotBack:
		return nil
	}
	notBack := protocol.NotBack{ApprovedBoot: v.Approved, ApprovedAt: v.Admission.ApprovedAt, Since: st.now}
	if err := r.patchNode(ctx, st, v, protocol.MarkNotBack(notBack)); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Node not back from its reboot", "node", v.Node.Name, "approvedBoot", v.Approved,
		"bootID", v.BootID, "ready", v.Ready, "waited", r.NodeReturnTimeout)
	r.events.Both(st.pool, v.Node, corev1.EventTypeWarning, v1alpha1.NodeNotBackReason, "Reboot",
		"Node %s was approved to reboot boot %s and is not back within %s (boot %s, Ready %t): its slot stays held and no other node is admitted in its place. Is the machine up?",
		v.Node.Name, v.Approved, r.NodeReturnTimeout, v.BootID, v.Ready)
	return nil
}

// forgetNotBack removes NodeNotBack once it stands for nothing.
func (r *Reconciler) forgetNotBack(ctx context.Context, st *poolState, v poolnodes.Member) error {
	err := r.patchNode(ctx, st, v, protocol.ForgetNotBack())
	return err
}
