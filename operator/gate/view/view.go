package view

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/operator/gate/members"
)

// Node is what the gate knows of one Node: the node protocol as
// protocol.Read tells it, and what only the gate knows. Its fields are
// named apart from protocol.NodeState's methods (InFlight, BackingOff,
// OptOut, Unavailable), which a field of the same name would hide.
type Node struct {
	protocol.NodeState

	// OtherPools names the other pools that select the node too.
	OtherPools []string
	// Relabelled names the pools the labels of a node in flight in the
	// pool put it in now, when that is not the pool alone (Relabelled): it
	// stays the pool's until its maintenance ends, and the gate says so.
	Relabelled []string
	// AdmittedUnseen is true when the gate admitted the node and its cache
	// does not show that yet.
	AdmittedUnseen bool
	// WindowOpen is true when the windows of one of the node's requests
	// (its pool's, its policy's, or none with ignoreWindows) let it be
	// admitted now; the one reboot satisfies them all.
	WindowOpen bool
	// NextOpening is, while WindowOpen is false, the earliest moment one of
	// the node's requests may be admitted; zero when unknown or never.
	NextOpening time.Time
	// WindowProblems say why some of the node's requests are never admitted
	// as things stand (their policy's windows cannot be read).
	WindowProblems []string
	// Frozen and FreezeProblems say which freezes hold all the node's
	// requests that windows alone would not, or cannot be read
	// (FreezeState.Describe); WindowOpen is then false.
	Frozen, FreezeProblems []string
	// StaleConfig is true while the node's only requests are for a config
	// its pool no longer wants (StaleConfig): it is not admitted for them.
	StaleConfig bool
	// InBackoff is true while the node waits for its next drain attempt
	// (protocol.NodeState.BackingOff): it is not admitted meanwhile.
	InBackoff bool
	// HeldUnreadable is true when every current request of the node is one
	// of a NodeMaintenance that cannot be read: none of them is admitted.
	HeldUnreadable bool
	// OptedOut is what keeps the node from being admitted although it asks
	// to be: its own do-not-disrupt annotation, or its pods when its turn
	// came (PodHeld); nil when nothing does.
	OptedOut *protocol.OptOut
	PodHeld  bool
	// Overdue is true when its pods have held the node past its pool's
	// podOptOuts.maxHold, and the pool keeps it held; Overridden is what
	// they held it for when the pool admits it all the same.
	Overdue    bool
	Overridden *protocol.OptOut
	// PodsChecked is true when the node's pods were looked at in this pass.
	PodsChecked bool
	// QueuedAt is when the node's requests count as made, for its place in
	// the queue: the times its daemon wrote, bounded by what kmaint saw
	// (pools.QueueTime).
	QueuedAt time.Time
	// QueueMoves is true when QueuedAt depends on the time
	// (pools.QueueTimeMoves): it is worked out at each reconcile, and the
	// node's place in the queue too.
	QueueMoves bool
	// Queued is true when the node is an ordinary member that asks to be
	// admitted (members.Place): it is in its members' queue, which the
	// plan reads, and not among the views unless its turn came (pulled).
	Queued bool
}

// Kept is what the gate keeps of a node between reconciles
// (poolnodes.Kept, members.Member): its view as far as the node, its
// NodeMaintenances and the pool's spec tell it, and what the parts of it
// that change with time are worked out from at each reconcile.
type Kept struct {
	View Node
	// Requests are the node's current requests that can be read
	// (HoldUnreadable), and Settings what its NodeMaintenances say of
	// them: its windows are found from both.
	Requests []protocol.Request
	Settings pools.SettingsList
}

// Read is the view of a node.
func Read(node *corev1.Node) *Node {
	// An unreadable node is kept, with its error: protocol.NodeState's
	// predicates keep it from being admitted, approved or completed.
	st, _ := protocol.Read(node)
	v := Of(st)
	return &v
}

// Of is the view of a node read already.
func Of(st protocol.NodeState) Node {
	// No windows unless the gate finds some.
	return Node{NodeState: st, WindowOpen: true}
}

// StartPass forgets what a reconcile found of the node on its own (its
// opt-outs, its pods, its windows): a view is kept between reconciles
// (poolnodes.Kept), and each finds these again.
func (v *Node) StartPass() {
	v.AdmittedUnseen, v.InBackoff = false, false
	v.WindowOpen, v.NextOpening, v.WindowProblems, v.Frozen, v.FreezeProblems = true, time.Time{}, nil, nil, nil
	v.OptedOut, v.PodHeld, v.Overdue, v.Overridden, v.PodsChecked = nil, false, false, nil, false
}

// Ordinary reports whether nothing is under way on the node that a phase
// acts on or reports node by node (package members): the gate counts it, and reads
// it when its turn comes. desired is its pool's desiredConfig, and
// selectable false when its pool's selector cannot be parsed (every node
// is then reported by name).
func (v *Node) Ordinary(desired string, selectable bool) bool {
	return selectable && v.Unreadable == nil && !v.SettleUnreadable() && !v.HeldAnnotated() &&
		v.Ready && !v.Unschedulable && !v.Cordoned &&
		v.Admission == nil && v.Approved == "" && v.Settle == nil && v.DrainFailure == nil && v.DrainRetry == nil &&
		v.Marks == nil && v.Unconfirmed == nil && v.NotBack == nil && v.DoNotDisrupt == nil && v.Hook == nil && v.Held == nil &&
		!v.Degraded() && v.DesiredConfig == desired && len(v.OtherPools) == 0 && !v.HeldUnreadable && !v.StaleConfig && !v.QueueMoves
}

// QuietlyRebooting reports whether the node is rebooting as approved and
// nothing else is under way on it that a phase acts on or reports node by
// node (package members): it counts against its pool's budget until it is back,
// and the gate reads it again when its object changes. In a rollout, most
// of a pool's nodes in flight are.
func (v *Node) QuietlyRebooting(desired string, selectable bool) bool {
	return selectable && v.Unreadable == nil && !v.SettleUnreadable() && !v.HeldAnnotated() &&
		v.Approved != "" && !v.RebootDone() &&
		v.Settle == nil && v.DrainFailure == nil && v.DrainRetry == nil &&
		v.Unconfirmed == nil && v.NotBack == nil && v.DoNotDisrupt == nil && v.Hook == nil && v.Held == nil &&
		!v.Degraded() && v.DesiredConfig == desired && len(v.OtherPools) == 0 && len(v.Relabelled) == 0 &&
		!v.HeldUnreadable && !v.StaleConfig && !v.QueueMoves
}

// Place says where the node goes among its pool's members (package
// members): quiet when it is Ordinary or QuietlyRebooting, queued when it
// is ordinary and asks to be admitted. desired is its pool's
// desiredConfig, and selectable false when its pool's selector cannot be
// parsed.
func (v *Node) Place(desired string, selectable bool) members.Place {
	ordinary := v.Ordinary(desired, selectable)
	return members.Place{
		Quiet:     ordinary || v.QuietlyRebooting(desired, selectable),
		Rebooting: v.Rebooting(),
		Queued:    ordinary && v.WantsAdmission(),
		Ready:     v.Ready,
		Current:   v.CurrentConfig == desired,
	}
}

// UsesBudget reports whether the node counts against its pool's budget:
// protocol.NodeState.Unavailable, or admitted by the gate in a way its
// cache does not show yet.
func (v *Node) UsesBudget() bool { return v.AdmittedUnseen || v.Unavailable() || v.SettleUnreadable() }

// Waiting reports whether the node asks to be admitted and nothing only the
// gate knows makes it ineligible.
func (v *Node) Waiting() bool {
	return v.WantsAdmission() && !v.AdmittedUnseen && len(v.OtherPools) == 0 && !v.HeldUnreadable && !v.InBackoff && !v.StaleConfig
}

// HoldUnreadable returns the requests that are not those of unreadable
// NodeMaintenances (unreadable, by request id), and marks the node held
// when none is left. The node's admission, when another request earns it,
// still names every request: the one reboot satisfies them all.
func (v *Node) HoldUnreadable(reqs []protocol.Request, unreadable map[string]string) []protocol.Request {
	if len(unreadable) == 0 {
		return reqs
	}
	var readable []protocol.Request
	for _, req := range reqs {
		if _, ok := unreadable[req.ID]; !ok {
			readable = append(readable, req)
		}
	}
	v.HeldUnreadable = len(readable) == 0
	return readable
}

// RequestTime is when the node's oldest outstanding request counts as
// made.
func (v *Node) RequestTime() time.Time { return v.QueuedAt }

// Relabelled returns the pools a node in flight in pool is in by its
// labels, when that is not pool alone: someone moved it while it was in
// flight. It stays in pool until its maintenance ends (pools.Of), and the
// gate says so. Nil for a node not in flight.
func Relabelled(s protocol.NodeState, pool string, sel pools.Selection) []string {
	if name, _ := s.InFlightPool(); name != pool {
		return nil
	}
	if in := pools.Selecting(s.Node, sel); len(in) != 1 || in[0] != pool {
		return in
	}
	return nil
}

// StaleConfig reports whether every request is a config request for a
// config the pool no longer wants: the node's daemon is about to replace
// it with one for the config the pool wants now, or to withdraw it when
// that is the config the node runs (a roll back). Admitted in between, the
// node would reboot for nothing, or twice.
func StaleConfig(reqs []protocol.Request, desired string) bool {
	for _, r := range reqs {
		if r.Source != v1alpha1.SourceConfig || r.Config == "" || r.Config == desired {
			return false
		}
	}
	return len(reqs) > 0
}
