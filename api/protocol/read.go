package protocol

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/kmaint/kmaint/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// NodeState is everything kmaint reads off one Node: what its kubelet
// reports and the decoded protocol annotations. Read is the one way to get
// one, so that every reader (the gate, the NodeMaintenance controller, the
// daemon, the plugin, metrics, the report and the demo) sees a node the same
// way and treats a malformed annotation by the same rule.
type NodeState struct {
	// Node is the object read; its annotations are not to be decoded again.
	Node *corev1.Node

	// BootID is the boot the kubelet reports.
	BootID string
	// Ready is the node's Ready condition.
	Ready bool
	// Unschedulable is true while the node is cordoned, by anyone.
	Unschedulable bool
	// Cordoned is true when kmaint's cordon marker is on the node.
	Cordoned bool

	// Requested is the daemon's reboot-requested value, whatever boot it
	// names; nil when absent. See Current for this boot's requests.
	Requested *Requested
	// Admission is the gate's admission; nil when absent.
	Admission *Admission
	// Approved is the boot ID whose reboot is approved; empty when none.
	Approved string
	// DrainFailure is the abandoned drain; nil when none.
	DrainFailure *DrainFailure
	// DrainRetry is a timed out drain to be tried again; nil when none.
	// See Retrying for the current boot's.
	DrainRetry *DrainRetrying
	// DrainForced is the last forced drain; nil when none.
	DrainForced *DrainForcing
	// Marks are the labels and taints kmaint added; nil when none.
	Marks *Marks
	// Daemon is what the daemon last reported; nil when absent.
	Daemon *DaemonState
	// Unconfirmed says the node came back from its approved reboot without
	// its daemon confirming it; nil when absent.
	Unconfirmed *UnconfirmedReboot
	// NotBack says the node was reported not back from its approved reboot
	// within the operator's bound; nil when absent.
	NotBack *NotBack
	// Settle says the node is back from its reboot and keeps its slot for
	// its pool's settle time and health checks; nil when it does not.
	Settle *Settle
	// settleAnnotated is whether the node carries a settle record, read or
	// not: asked of every node at every count of a pool's budget, it is
	// found once, when the node is read.
	settleAnnotated bool
	// heldAnnotated is whether the node carries the gate's note of why it
	// holds the node (AdmissionHeld), read or not (HeldAnnotated).
	heldAnnotated bool
	// current is Current as Read found it, when read is true: the gate
	// asks it of every node of a pool several times per reconcile, and
	// working it out reads the decoded record, in memory scattered over
	// thousands of nodes. A NodeState made otherwise than by Read works it
	// out at each call.
	current *Requested
	read    bool
	// DoNotDisrupt is the opt-out the node's own annotations say
	// (NodeOptOut); nil when they say none.
	DoNotDisrupt *OptOut
	// Hook is where the node stands in the hooks of a point of its
	// admission; nil when it waits for none.
	Hook *HookRecord
	// Held is what the gate last found on the node's pods that holds its
	// admission; nil when none (see AdmissionHeld and OptOut).
	Held *Held
	// Silences are the Alertmanager silences kept for the node's
	// maintenance; nil when none.
	Silences *SilenceRecord
	// DesiredConfig and CurrentConfig are the config identities the pool
	// wants and the node runs; empty when absent.
	DesiredConfig, CurrentConfig string

	// Unreadable says which annotations could not be read; nil when all
	// could. A node with unreadable annotations is never admitted, never
	// approved and never taken for rebooted (see the predicates), and its
	// slot in the pool's budget stays taken while it may be in flight.
	Unreadable error
}

// Read decodes a node's kmaint annotations. It never fails half-way: the
// returned state holds every annotation that could be read, and the error
// (also in NodeState.Unreadable) names each one that could not. A present
// but unreadable admission reads as an admission of no boot, so that the node
// keeps its slot: counting it available could put its pool over budget.
func Read(node *corev1.Node) (NodeState, error) {
	s := NodeState{
		Node:          node,
		BootID:        BootID(node),
		Ready:         Ready(node),
		Unschedulable: node.Spec.Unschedulable,
		Cordoned:      node.Annotations[Cordoned] == "true",
		Approved:      node.Annotations[RebootApproved],
		DesiredConfig: node.Annotations[DesiredConfig],
		CurrentConfig: node.Annotations[CurrentConfig],
	}
	var errs []error
	s.Requested = decode[Requested](node, RebootRequested, &errs)
	before := len(errs)
	if s.Admission = decode[Admission](node, Admitted, &errs); len(errs) > before {
		s.Admission = &Admission{}
	} else if err := checkApproval(node, s.Approved, s.Admission); err != nil {
		errs = append(errs, err)
	}
	s.DrainFailure = decode[DrainFailure](node, DrainFailed, &errs)
	s.DrainRetry = decode[DrainRetrying](node, DrainRetry, &errs)
	s.DrainForced = decode[DrainForcing](node, DrainForced, &errs)
	s.Marks = decode[Marks](node, NodeMarks, &errs)
	s.Daemon = decode[DaemonState](node, State, &errs)
	s.Unconfirmed = decode[UnconfirmedReboot](node, RebootUnconfirmed, &errs)
	s.NotBack = decode[NotBack](node, NodeNotBack, &errs)
	s.Settle = decode[Settle](node, Settling, &errs)
	_, s.settleAnnotated = node.Annotations[Settling]
	s.DoNotDisrupt = NodeOptOut(node)
	s.Hook = decode[HookRecord](node, Hook, &errs)
	s.Held = readHeld(node)
	s.Silences = decode[SilenceRecord](node, Silenced, &errs)
	_, s.heldAnnotated = node.Annotations[AdmissionHeld]
	s.Unreadable = errors.Join(errs...)
	s.shareBootIDs()
	s.current, s.read = s.findCurrent(), true
	return s, s.Unreadable
}

// shareBootIDs makes every record's boot ID that is the node's the node's
// own string. The predicates compare them many times per node at every
// reconcile of its pool; two equal strings from different decodings are
// compared byte by byte, in memory scattered over thousands of nodes, and
// that was a tenth of the gate's reconcile at 20000 nodes. The same string
// compares equal at once.
func (s *NodeState) shareBootIDs() {
	share := func(id *string) {
		if *id == s.BootID {
			*id = s.BootID
		}
	}
	share(&s.Approved)
	if s.Requested != nil {
		share(&s.Requested.BootID)
	}
	if s.Admission != nil {
		share(&s.Admission.BootID)
	}
	if s.Daemon != nil {
		share(&s.Daemon.BootID)
	}
	if s.DrainRetry != nil {
		share(&s.DrainRetry.BootID)
	}
	if s.DrainFailure != nil {
		share(&s.DrainFailure.BootID)
	}
}

// checkApproval says what is wrong with an approval that is not the gate's:
// the gate approves only the boot it admitted, and removes the approval
// and the admission together, so an approval without an admission, or of
// another boot (a hand-written "garbage"), is read as unreadable. Taken as
// it stands, it would be an approval of an old boot, on a node Ready in
// another: a reboot that never happened would be completed.
func checkApproval(node *corev1.Node, approved string, admission *Admission) error {
	switch {
	case approved == "":
		return nil
	case admission == nil:
		return fmt.Errorf("annotation %s on node %s is %s, but the node has no %s annotation: the gate approves only a boot it admitted",
			RebootApproved, node.Name, quote(approved), Admitted)
	case admission.BootID != approved:
		return fmt.Errorf("annotation %s on node %s is %s, but the node was admitted for boot %s: the gate approves only the boot it admitted",
			RebootApproved, node.Name, quote(approved), quote(admission.BootID))
	}
	return nil
}

// quote shows a value a person or a tool wrote, escaped and cut short.
func quote(v string) string {
	const most = 64
	if len(v) > most {
		return strconv.Quote(v[:most]) + "…"
	}
	return strconv.Quote(v)
}

// decode reads one annotation; nil when absent or unreadable, and then the
// error is added to errs.
func decode[T any](node *corev1.Node, key string, errs *[]error) *T {
	var v T
	ok, err := Decode(node, key, &v)
	if err != nil {
		*errs = append(*errs, err)
		return nil
	}
	if !ok {
		return nil
	}
	return &v
}

// Name is the node's name.
func (s NodeState) Name() string { return s.Node.Name }

// Current returns the requests the node made in its current boot; nil when
// there are none. Requests of an earlier boot were satisfied by its reboot.
func (s NodeState) Current() *Requested {
	if s.read {
		return s.current
	}
	return s.findCurrent()
}

func (s NodeState) findCurrent() *Requested {
	if s.Requested == nil || s.Requested.BootID != s.BootID || len(s.Requested.Requests) == 0 {
		return nil
	}
	return s.Requested
}

// Unavailable reports whether the node counts against its pool's budget:
// admitted, approved, settling after its reboot, not Ready or cordoned.
func (s NodeState) Unavailable() bool {
	return s.Admission != nil || s.Approved != "" || s.Settle != nil || !s.Ready || s.Unschedulable
}

// Draining reports whether the node is admitted and not yet approved.
func (s NodeState) Draining() bool { return s.Admission != nil && s.Approved == "" }

// Rebooting reports whether the node is approved and not yet back.
func (s NodeState) Rebooting() bool { return s.Approved != "" }

// DrainFailedForCurrent reports whether an abandoned drain covers every
// request of the current boot, so that admitting them again would repeat it.
func (s NodeState) DrainFailedForCurrent() bool {
	cur := s.Current()
	return cur != nil && s.DrainFailure != nil && s.DrainFailure.Covers(*cur)
}

// WantsAdmission reports whether the node asks its pool to admit it: it has
// requests in its current boot that no failed drain covers, it is not
// admitted, approved or settling after a reboot already, and all its
// annotations can be read.
func (s NodeState) WantsAdmission() bool {
	return s.Current() != nil && s.Admission == nil && s.Approved == "" && s.Settle == nil && s.Unreadable == nil && !s.DrainFailedForCurrent()
}

// DaemonDegraded reports whether the daemon says the approved reboot did not
// happen, in the boot the node runs: a node that has since come back with
// another boot did reboot, whatever its daemon said before and has not
// rewritten yet (the reboot was slower than the daemon's timeout, or the
// daemon is not back).
func (s NodeState) DaemonDegraded() bool {
	return s.Daemon != nil && s.Daemon.Phase == DaemonDegraded && s.Daemon.BootID == s.BootID
}

// DaemonRebooting reports whether the daemon says it asked for the
// approved reboot, in the boot the node runs.
func (s NodeState) DaemonRebooting() bool {
	return s.Daemon != nil && s.Daemon.Phase == DaemonRebooting && s.Daemon.BootID == s.BootID
}

// Degraded reports whether the node needs a person: its daemon says the
// approved reboot did not happen, the drain for its current requests failed,
// its daemon did not come back after the reboot, the node itself did not
// come back within the operator's bound, or its annotations cannot be read.
func (s NodeState) Degraded() bool {
	return s.DaemonDegraded() || s.DrainFailedForCurrent() || s.DaemonMissing() || s.NodeNotBackReported() || s.Unreadable != nil
}

// RebootDone reports whether the approved reboot has completed: the node is
// Ready with a boot ID other than the approved one, and its daemon no longer
// shows a request of the approved boot. A Ready node with the old boot ID has
// not rebooted, however it looks; a node whose annotations cannot be read is
// not taken for done.
func (s NodeState) RebootDone() bool {
	if s.Approved == "" || !s.Ready || s.BootID == "" || s.BootID == s.Approved || s.Unreadable != nil {
		return false
	}
	return s.Requested == nil || s.Requested.BootID != s.Approved
}

// AdmissionVoid reports whether an admission that was not yet approved no
// longer stands for anything: the node rebooted by other means, or its
// requests are gone. An unreadable node's admission is never void: what it
// stands for cannot be told.
func (s NodeState) AdmissionVoid() bool {
	if s.Admission == nil || s.Approved != "" || s.Unreadable != nil {
		return false
	}
	return s.BootID != s.Admission.BootID || s.Current() == nil
}

// hookAt reports whether the node's hooks record is of point and not
// passed yet: the node waits there, or its hook failed.
func (s NodeState) hookAt(point HookPoint) bool {
	return s.Hook != nil && s.Hook.Point == point && !s.Hook.Passed()
}

// HookHalts reports whether a hook of the node's admission failed for good
// and halts its pool (HookFailure.Halts).
func (s NodeState) HookHalts() bool {
	if s.Admission == nil || s.Hook == nil {
		return false
	}
	f := s.Hook.Failed()
	return f != nil && f.Failure.Halts()
}

// Stage is where a node is on the reboot path: the phase of the reboot it
// is in, in the NodeMaintenance's own words (Pending, Requested, Draining,
// Approved, Rebooting), or one of the two stages below, which a node has and
// a request does not.
type Stage = v1alpha1.Phase

// The stages of a node that are not phases of a request.
const (
	// StageIdle: nothing asked for.
	StageIdle Stage = "Idle"
	// StageDegraded: the approved reboot did not happen, the drain failed,
	// or the node's kmaint annotations cannot be read.
	StageDegraded Stage = "Degraded"
)

// Position is where a node is on the reboot path, why, and since when.
type Position struct {
	Stage Stage
	// Message says why, for a person; empty when there is nothing to say.
	Message string
	// Since is when the node entered the stage; zero when unknown.
	Since time.Time
}

// Changed reports whether a node update can change what Read tells: the
// annotations, the boot ID or readiness. The kubelet's heartbeats change
// none of them.
func Changed(old, updated *corev1.Node) bool {
	return !maps.Equal(old.Annotations, updated.Annotations) ||
		BootID(old) != BootID(updated) ||
		Ready(old) != Ready(updated) ||
		old.Spec.Unschedulable != updated.Spec.Unschedulable
}

// Position tells the node's stage from its annotations. pending is whether
// the node has an open NodeMaintenance its daemon has not raised yet, which
// only the API knows. What degrades the node comes first, then where its
// admission stands (InFlight), then its settling and its requests.
func (s NodeState) Position(pending bool) Position {
	if p, ok := s.degradedPosition(); ok {
		return p
	}
	if p, ok := s.InFlight(); ok {
		return p
	}
	cur := s.Current()
	switch {
	case s.Settle != nil && s.Settle.Failure != nil:
		return Position{Stage: v1alpha1.PhaseSettling, Message: s.Settle.Failure.Message() + "; its pool is halted", Since: s.Settle.Failure.Time}
	case s.Settle != nil && s.Settle.Until.IsZero():
		return Position{Stage: v1alpha1.PhaseSettling, Message: "settling; not Ready, its settle time starts again when it is", Since: s.Settle.Since}
	case s.Settle != nil:
		return Position{Stage: v1alpha1.PhaseSettling, Message: "settling until " + s.Settle.Until.UTC().Format(time.RFC3339), Since: s.Settle.Since}
	case cur != nil:
		return Position{Stage: v1alpha1.PhaseRequested, Since: cur.Earliest()}
	case pending:
		return Position{Stage: v1alpha1.PhasePending}
	}
	return Position{Stage: StageIdle}
}

// degradedPosition is the node's stage when it needs a person (Degraded),
// and why; false when nothing degrades it.
func (s NodeState) degradedPosition() (Position, bool) {
	switch {
	case s.Unreadable != nil:
		return Position{Stage: StageDegraded, Message: s.Unreadable.Error()}, true
	case s.DaemonDegraded():
		return Position{Stage: StageDegraded, Message: s.Daemon.Message, Since: s.Daemon.Since}, true
	case s.DrainFailedForCurrent():
		return Position{Stage: StageDegraded, Message: fmt.Sprintf("drain failed (%s): %s", s.DrainFailure.Reason, s.DrainFailure.Message), Since: s.DrainFailure.Time}, true
	case s.DaemonMissing():
		return Position{Stage: StageDegraded, Message: s.Unconfirmed.Message(), Since: s.Unconfirmed.Since}, true
	case s.NodeNotBackReported():
		return Position{Stage: StageDegraded, Message: s.NotBack.Message(), Since: s.NotBack.Since}, true
	}
	return Position{}, false
}

// InFlight is where a node its pool admitted stands, leaving aside what
// degrades it (Position says that first): Draining, at the hooks of its
// admission before the reboot or not; Approved, until its daemon says it
// asked for the reboot; Rebooting, then, and once back in another boot
// until the reboot is completed (waiting for the daemon's word, or at its
// afterReboot hooks). False when the node is neither admitted nor approved.
// The gate's protocol makes these stages; the plugin and the
// NodeMaintenance controller read them here.
func (s NodeState) InFlight() (Position, bool) {
	switch {
	case s.Approved != "" && s.Approved == s.BootID:
		if s.DaemonRebooting() {
			return Position{Stage: v1alpha1.PhaseRebooting, Since: s.Daemon.Since}, true
		}
		return Position{Stage: v1alpha1.PhaseApproved}, true
	case s.AwaitingDaemon():
		// The gate writes when it first saw the node back only once the
		// wait has lasted a minute; before that the node is just as back.
		var since time.Time
		if u := s.UnconfirmedFor(); u != nil {
			since = u.Since
		}
		return Position{Stage: v1alpha1.PhaseRebooting, Message: fmt.Sprintf("back with boot %s; waiting for its daemon to confirm", s.BootID), Since: since}, true
	case s.Approved != "" && s.hookAt(AfterReboot):
		return Position{Stage: v1alpha1.PhaseRebooting, Message: fmt.Sprintf("back with boot %s; %s", s.BootID, s.Hook.Describe()), Since: s.Hook.Since}, true
	case s.Approved != "":
		return Position{Stage: v1alpha1.PhaseRebooting, Message: fmt.Sprintf("coming back with boot %s", orUnknown(s.BootID))}, true
	case s.Admission != nil && (s.hookAt(BeforeDrain) || s.hookAt(BeforeReboot)) && s.Hook.BootID == s.Admission.BootID:
		return Position{Stage: v1alpha1.PhaseDraining, Message: s.Hook.Describe(), Since: s.Hook.Since}, true
	case s.Admission != nil:
		return Position{Stage: v1alpha1.PhaseDraining, Since: s.Admission.Time}, true
	}
	return Position{}, false
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
