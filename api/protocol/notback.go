package protocol

import (
	"fmt"
	"time"
)

// NodeNotBack (operator): the node was approved to reboot and has not come
// back (a new boot ID, Ready) within the operator's bound, a NotBack. The
// operator's aftercare writes it when the bound passes, with a Warning event, so that the
// node, its pool and its NodeMaintenance say so once, whatever restarts in
// between; the node keeps its slot in the pool's budget, since it really is
// unavailable. Aftercare removes it when the node comes back, or its
// approval goes.
const NodeNotBack = Prefix + "node-not-back"

// NotBack is the value of NodeNotBack.
type NotBack struct {
	// ApprovedBoot is the boot whose reboot was approved.
	ApprovedBoot string `json:"approvedBoot"`
	// ApprovedAt is when the reboot was approved (or, for an approval
	// older than the field, first timed).
	ApprovedAt time.Time `json:"approvedAt"`
	// Since is when aftercare reported the node not back.
	Since time.Time `json:"since"`
}

// Message says, for a person, what a node that is not back means.
func (b NotBack) Message() string {
	return fmt.Sprintf("not back: approved to reboot boot %s at %s, and not back (a new boot ID, Ready) by %s; "+
		"its pool's slot stays held for it, and no other node is admitted in its place. Is the machine up?",
		b.ApprovedBoot, b.ApprovedAt.UTC().Format(time.RFC3339), b.Since.UTC().Format(time.RFC3339))
}

// back reports whether the node is back from the approved reboot as far as
// the kubelet can tell: Ready, with a boot ID other than the approved one.
func (s NodeState) back() bool {
	return s.Ready && s.BootID != "" && s.BootID != s.Approved
}

// AwaitingReturn reports whether the node is approved to reboot and not
// back yet: still in the approved boot, or not Ready. A node whose
// annotations cannot be read is not timed: what its approval stands for
// cannot be told.
func (s NodeState) AwaitingReturn() bool {
	return s.Approved != "" && s.Admission != nil && s.Unreadable == nil && !s.back()
}

// NotBackFor returns the NotBack reported for the approval the node has,
// nil when none was.
func (s NodeState) NotBackFor() *NotBack {
	if s.NotBack == nil || s.NotBack.ApprovedBoot != s.Approved {
		return nil
	}
	return s.NotBack
}

// NodeNotBackReported reports whether the node is not back from its
// approved reboot past the operator's bound: it is degraded.
func (s NodeState) NodeNotBackReported() bool {
	return s.AwaitingReturn() && s.NotBackFor() != nil
}

// NotBackStale reports whether NodeNotBack is on the node and no longer
// stands for anything: the node came back, or its approval changed or went.
func (s NodeState) NotBackStale() bool {
	return s.NotBack != nil && s.Unreadable == nil && !s.NodeNotBackReported()
}
