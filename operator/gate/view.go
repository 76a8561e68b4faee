package gate

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
)

// nodeView is what the gate knows of one Node: the node protocol as
// protocol.Read tells it, and what only the gate knows.
type nodeView struct {
	protocol.NodeState

	// otherPools names the other pools that select the node too.
	otherPools []string
	// relabelled names the pools the labels of a node in flight in the
	// pool put it in now, when that is not the pool alone (relabelled): it
	// stays the pool's until its maintenance ends, and the gate says so.
	relabelled []string
	// inflight is true when the gate admitted the node and its cache does
	// not show that yet.
	inflight bool
	// windowOpen is true when the windows of one of the node's requests
	// (its pool's, its policy's, or none with ignoreWindows) let it be
	// admitted now; the one reboot satisfies them all.
	windowOpen bool
	// nextOpening is, while windowOpen is false, the earliest moment one of
	// the node's requests may be admitted; zero when unknown or never.
	nextOpening time.Time
	// windowProblems say why some of the node's requests are never admitted
	// as things stand (their policy's windows cannot be read).
	windowProblems []string
	// frozen and freezeProblems say which freezes hold all the node's
	// requests that windows alone would not, or cannot be read
	// (FreezeState.Describe); windowOpen is then false.
	frozen, freezeProblems []string
	// staleConfig is true while the node's only requests are for a config
	// its pool no longer wants (staleConfig): it is not admitted for them.
	staleConfig bool
	// backingOff is true while the node waits for its next drain attempt
	// (protocol.NodeState.BackingOff): it is not admitted meanwhile.
	backingOff bool
	// heldUnreadable is true when every current request of the node is one
	// of a NodeMaintenance that cannot be read: none of them is admitted.
	heldUnreadable bool
	// optOut is what keeps the node from being admitted although it asks
	// to be: its own do-not-disrupt annotation, or its pods when its turn
	// came (podHeld); nil when nothing does.
	optOut  *protocol.OptOut
	podHeld bool
	// overdue is true when its pods have held the node past its pool's
	// podOptOuts.maxHold, and the pool keeps it held; overridden is what
	// they held it for when the pool admits it all the same.
	overdue    bool
	overridden *protocol.OptOut
	// checked is true when the node's pods were looked at in this pass.
	checked bool
	// queuedAt is when the node's requests count as made, for its place in
	// the queue: the times its daemon wrote, bounded by what kmaint saw
	// (pools.QueueTime).
	queuedAt time.Time
	// queueMoves is true when queuedAt depends on the time
	// (pools.QueueTimeMoves): it is worked out at each reconcile, and the
	// node's place in the queue too.
	queueMoves bool
	// queued is true when the node is an ordinary member that asks to be
	// admitted (members.Place): it is in its members' queue, which the
	// plan reads, and not among the views unless its turn came (pulled).
	queued bool
}

func newNodeView(node *corev1.Node) *nodeView {
	// An unreadable node is kept, with its error: protocol.NodeState's
	// predicates keep it from being admitted, approved or completed.
	st, _ := protocol.Read(node)
	v := viewOf(st)
	return &v
}

// viewOf is the view of a node read already.
func viewOf(st protocol.NodeState) nodeView {
	// No windows unless observe finds some.
	return nodeView{NodeState: st, windowOpen: true}
}

// startPass forgets what a reconcile found of the node on its own (its
// opt-outs, its pods, its windows): a view is kept between reconciles
// (poolnodes.Kept), and each finds these again.
func (v *nodeView) startPass() {
	v.inflight, v.backingOff = false, false
	v.windowOpen, v.nextOpening, v.windowProblems, v.frozen, v.freezeProblems = true, time.Time{}, nil, nil, nil
	v.optOut, v.podHeld, v.overdue, v.overridden, v.checked = nil, false, false, nil, false
}

// ordinary reports whether nothing is under way on the node that a phase
// acts on or reports node by node (package members): the gate counts it, and reads
// it when its turn comes. desired is its pool's desiredConfig, and
// selectable false when its pool's selector cannot be parsed (every node
// is then reported by name).
func (v *nodeView) ordinary(desired string, selectable bool) bool {
	return selectable && v.Unreadable == nil && !v.SettleUnreadable() && !v.HeldAnnotated() &&
		v.Ready && !v.Unschedulable && !v.Cordoned &&
		v.Admission == nil && v.Approved == "" && v.Settle == nil && v.DrainFailure == nil && v.DrainRetry == nil &&
		v.Marks == nil && v.Unconfirmed == nil && v.NotBack == nil && v.DoNotDisrupt == nil && v.Hook == nil && v.Held == nil &&
		!v.Degraded() && v.DesiredConfig == desired && len(v.otherPools) == 0 && !v.heldUnreadable && !v.staleConfig && !v.queueMoves
}

// quietlyRebooting reports whether the node is rebooting as approved and
// nothing else is under way on it that a phase acts on or reports node by
// node (package members): it counts against its pool's budget until it is back,
// and the gate reads it again when its object changes. In a rollout, most
// of a pool's nodes in flight are.
func (v *nodeView) quietlyRebooting(desired string, selectable bool) bool {
	return selectable && v.Unreadable == nil && !v.SettleUnreadable() && !v.HeldAnnotated() &&
		v.Approved != "" && !v.RebootDone() &&
		v.Settle == nil && v.DrainFailure == nil && v.DrainRetry == nil &&
		v.Unconfirmed == nil && v.NotBack == nil && v.DoNotDisrupt == nil && v.Hook == nil && v.Held == nil &&
		!v.Degraded() && v.DesiredConfig == desired && len(v.otherPools) == 0 && len(v.relabelled) == 0 &&
		!v.heldUnreadable && !v.staleConfig && !v.queueMoves
}

// unavailable reports whether the node counts against its pool's budget.
func (v *nodeView) unavailable() bool { return v.inflight || v.Unavailable() || v.SettleUnreadable() }

// waiting reports whether the node asks to be admitted and nothing only the
// gate knows makes it ineligible.
func (v *nodeView) waiting() bool {
	return v.WantsAdmission() && !v.inflight && len(v.otherPools) == 0 && !v.heldUnreadable && !v.backingOff && !v.staleConfig
}

// holdUnreadable returns the requests that are not those of unreadable
// NodeMaintenances (unreadable, by request id), and marks the node held
// when none is left. The node's admission, when another request earns it,
// still names every request: the one reboot satisfies them all.
func (v *nodeView) holdUnreadable(reqs []protocol.Request, unreadable map[string]string) []protocol.Request {
	if len(unreadable) == 0 {
		return reqs
	}
	var readable []protocol.Request
	for _, req := range reqs {
		if _, ok := unreadable[req.ID]; !ok {
			readable = append(readable, req)
		}
	}
	v.heldUnreadable = len(readable) == 0
	return readable
}

// requestTime is when the node's oldest outstanding request counts as
// made.
func (v *nodeView) requestTime() time.Time { return v.queuedAt }
