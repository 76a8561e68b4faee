package maintenance

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// verdict is where a NodeMaintenance should be: its phase, why, and the boot
// IDs learned on the way.
type verdict struct {
	phase        v1alpha1.Phase
	reason       string
	message      string
	bootIDBefore string
	bootIDAfter  string
	// degraded, when set, is the message of a Degraded condition with
	// degradedReason.
	degraded       string
	degradedReason string
	// wait says why a Requested request is not admitted yet, if known.
	wait waiting
	// forced, when set, is the message of a DrainForced condition: the
	// request's drain was forced.
	forced string
	// retrying says the drain is a retry of one that did not finish.
	retrying bool
	// health is the Healthy condition, in a pool with health checks.
	health health
	// times are when the node's records say phases began (the gate's
	// admission: draining, approved), for phases this controller saw late
	// or not at all (its reconciles lag a burst of a node's changes, and a
	// node may be admitted, drained and approved in one pass of the gate);
	// a phase with no time here is stamped when it is first seen.
	times map[v1alpha1.Phase]time.Time
}

// decide computes a NodeMaintenance's phase from its node (nil when the node
// does not exist). It looks only at the state of the world, so a phase
// passed through while nobody watched is skipped, not lost. older names an
// older open NodeMaintenance for the same node that started in the API, if
// there is one. w says why the node's raised requests wait (see waitFor).
//
// A node whose annotations cannot be read is never taken for rebooted: its
// request stays where it was and says why.
//
// In a guarded pool (g) a request whose reboot the gate approved is
// Rebooting until aftercare completes it, Settling while the node settles
// (the settle record names the boot it rebooted from), and Succeeded only
// once aftercare removed the record: never before the completion wrote it.
func decide(nm *v1alpha1.NodeMaintenance, requestID string, f *protocol.NodeState, older string, w waiting, g guard) verdict {
	s := nm.Status
	v := verdict{phase: s.Phase, bootIDBefore: s.BootIDBefore, bootIDAfter: s.BootIDAfter}
	if w.reason == "" {
		w = budgetWaitKept(s)
	}
	if s.Phase.Done() {
		v.reason, v.message = "", s.Message
		return v
	}
	if f == nil {
		return failed(v, v1alpha1.NodeNotFoundReason, fmt.Sprintf("node %s does not exist; nothing will be rebooted", nm.Spec.NodeName))
	}
	raised := f.Requested != nil && f.Requested.Has(requestID)
	// Request ids are unique, so one the daemon shows cancelled is this
	// request, withdrawn before its reboot was approved.
	if f.Requested != nil && slices.Contains(f.Requested.Cancelled, requestID) {
		return failed(v, v1alpha1.CancelledReason, fmt.Sprintf("the request was cancelled on node %s (boot %s) before its reboot was approved", nm.Spec.NodeName, f.Requested.BootID))
	}
	// Only a request not yet raised or journaled can be refused: once the
	// node has it, the coming reboot satisfies it whatever else is open.
	if s.BootIDBefore == "" && older != "" && !raised && s.JournaledBootID == "" {
		return failed(v, v1alpha1.DuplicateReason, fmt.Sprintf("node %s already has an open request, NodeMaintenance %s; this one will not be carried out", nm.Spec.NodeName, older))
	}
	if v.bootIDBefore == "" {
		switch {
		case raised:
			v.bootIDBefore = f.Requested.BootID
		case s.JournaledBootID != "":
			// The daemon journaled it, and the node rebooted (or the
			// annotation changed) before the operator saw it raised.
			v.bootIDBefore = s.JournaledBootID
		case recordedInEndedBoot(nm, f.BootID):
			// Recorded from the node in a boot the node has left before
			// the record's first phase was written (the leader replaced
			// in between, or slow): the request was raised in that
			// boot, and its reboot answered it.
			v.bootIDBefore = nm.Labels[v1alpha1.BootIDLabel]
		default:
			v.phase, v.message = v1alpha1.PhasePending, fmt.Sprintf("waiting for node %s's daemon to raise the request", nm.Spec.NodeName)
			return v
		}
	}
	boot := v.bootIDBefore
	if a := f.Admission; a != nil && a.BootID == boot {
		v.times = map[v1alpha1.Phase]time.Time{v1alpha1.PhaseDraining: a.Time}
		if !a.ApprovedAt.IsZero() {
			v.times[v1alpha1.PhaseApproved] = a.ApprovedAt
		}
	}

	switch {
	case f.Unreadable != nil:
		v.message = fmt.Sprintf("node %s's kmaint annotations cannot be read (%v); nothing is done to it until they can", nm.Spec.NodeName, f.Unreadable)
		if v.phase == v1alpha1.PhasePending || v.phase == "" {
			v.phase = v1alpha1.PhaseRequested
		}
		v.wait = w
	case f.Settle != nil && f.Settle.RebootedBoot == boot:
		v = settling(v, nm, f.Settle, g)
	case g.guarded && f.BootID != "" && f.BootID != boot && f.Approved == boot:
		v.phase = v1alpha1.PhaseRebooting
		v.message = fmt.Sprintf("node %s is back with boot %s; waiting for its pool to complete the reboot", nm.Spec.NodeName, f.BootID)
		if h := f.Hook; h != nil && h.Point == protocol.AfterReboot && h.BootID == f.BootID {
			v.message = fmt.Sprintf("node %s is back with boot %s; %s", nm.Spec.NodeName, f.BootID, h.Describe())
		}
	case f.BootID != "" && f.BootID != boot && f.Ready && (f.Requested == nil || f.Requested.BootID != boot):
		v.phase, v.bootIDAfter = v1alpha1.PhaseSucceeded, f.BootID
		v.message = fmt.Sprintf("node %s rebooted: boot %s, then %s", nm.Spec.NodeName, boot, f.BootID)
		v.health = settled(nm)
	case f.BootID != "" && f.BootID != boot && f.Ready && f.Unconfirmed != nil && f.Unconfirmed.ApprovedBoot == boot && f.Approved != boot:
		// Aftercare completed the reboot without the daemon: what it can
		// prove (a new boot, Ready) is all there is to know.
		v.phase, v.bootIDAfter = v1alpha1.PhaseSucceeded, f.BootID
		v.message = fmt.Sprintf("node %s rebooted: boot %s, then %s; its daemon did not confirm the reboot", nm.Spec.NodeName, boot, f.BootID)
		v.degraded, v.degradedReason = f.Unconfirmed.Message(), v1alpha1.DaemonMissingReason
	case f.BootID != boot:
		// Back in a new boot, not yet Ready or confirmed: still rebooting,
		// in the words of the phase before, so that this step costs no
		// write of its own at every reboot. The node shows its new boot,
		// and a node that stays here is reported not back, or its daemon
		// missing, on this record when the gate's waits run out.
		v.phase, v.message = v1alpha1.PhaseRebooting, rebootingMessage(nm.Spec.NodeName)
	case f.DrainFailure != nil && f.DrainFailure.BootID == boot && slices.Contains(f.DrainFailure.Requests, requestID):
		return failed(v, f.DrainFailure.Reason, f.DrainFailure.Message)
	case f.Admission != nil && f.Admission.BootID == boot:
		// The node runs boot (the case above), admitted for it: approved
		// (an approval is only of the admitted boot) or draining.
		v = admitted(v, nm.Spec.NodeName, f, s.Phase)
	default:
		v.phase, v.message = v1alpha1.PhaseRequested, fmt.Sprintf("node %s requests a reboot and waits for its pool to admit it", nm.Spec.NodeName)
		v.wait = w
	}
	if f.DrainForced != nil && f.DrainForced.For(boot, requestID) {
		v.forced = f.DrainForced.Message(nm.Spec.NodeName)
	}
	if r := f.DrainRetry; v.phase == v1alpha1.PhaseDraining && r != nil && r.BootID == boot {
		v.message = fmt.Sprintf("%s (attempt %d of %d)", v.message, r.Attempts+1, r.MaxAttempts)
		v.retrying = true
	}
	// A node not back from its approved reboot keeps the request where it
	// is, Approved or Rebooting, and says so: it may still come back.
	if f.NodeNotBackReported() && f.Approved == boot && v.degraded == "" {
		v.degraded, v.degradedReason = f.NotBack.Message(), v1alpha1.NodeNotBackReason
	}
	if v.phase == v1alpha1.PhaseRequested && w.reason != "" {
		v.message = fmt.Sprintf("node %s requests a reboot and waits: %s", nm.Spec.NodeName, w.message)
	}
	return v
}

// admitted is where a request stands whose boot its node runs and its pool
// admitted, at the node's stage (protocol.NodeState.InFlight) in this
// controller's words: Draining, at a hook before the reboot or not;
// Approved until the daemon says it asked for the reboot, so that a node
// that stays Approved has a daemon that does not act; Rebooting then. Only
// this controller knows what the request showed (was): once Rebooting it
// stays so.
func admitted(v verdict, node string, f *protocol.NodeState, was v1alpha1.Phase) verdict {
	pos, _ := f.InFlight()
	switch {
	case pos.Stage == v1alpha1.PhaseDraining:
		v.phase, v.message = v1alpha1.PhaseDraining, fmt.Sprintf("node %s is admitted, cordoned and draining", node)
		if pos.Message != "" {
			v.message = fmt.Sprintf("node %s is admitted and cordoned; %s", node, pos.Message)
		}
	case f.DaemonDegraded():
		v.phase, v.message = v1alpha1.PhaseRebooting, fmt.Sprintf("node %s was asked to reboot and has not", node)
		v.degraded, v.degradedReason = f.Daemon.Message, v1alpha1.RebootNotObservedReason
	case pos.Stage == v1alpha1.PhaseRebooting, was == v1alpha1.PhaseRebooting:
		v.phase, v.message = v1alpha1.PhaseRebooting, rebootingMessage(node)
	default:
		v.phase, v.message = v1alpha1.PhaseApproved, fmt.Sprintf("node %s is drained and approved to reboot; waiting for its daemon to reboot it", node)
	}
	return v
}

// budgetWaitKept is the wait for the budget a request showed, kept while
// the pool has a slot free and the request is not admitted yet. In a
// rollout a slot is free for the moment between one node's reboot
// completing and the next node's admission, and a pool status written then
// said so: every waiting request dropped its wait for the budget and took it
// back at the next write, two status writes each per free slot seen, which
// grew with the number waiting (5.1 status writes per record at 2000 nodes
// against 3.1 at 500). The request still waits its turn in the queue; it
// leaves Requested once admitted, and another reason to wait replaces this
// one.
func budgetWaitKept(s v1alpha1.NodeMaintenanceStatus) waiting {
	c := meta.FindStatusCondition(s.Conditions, v1alpha1.WaitingCondition)
	if s.Phase != v1alpha1.PhaseRequested || c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.BudgetExhaustedReason {
		return waiting{}
	}
	return waiting{reason: c.Reason, message: c.Message}
}

// passingPhaseHold is how long a request must have been Draining or
// Approved before that phase is written on its own. Most reboots pass
// through both in seconds: a node with a few pods drains in two or three,
// and its daemon acts on the approval within milliseconds. The write of
// the next phase stamps their times from the node's records (the gate's
// admission, its approval), so nothing is lost by not writing them, and a
// reboot costs one or two status writes less.
const passingPhaseHold = 5 * time.Second

// holdUntil returns until when a verdict whose only news is that the
// request entered Draining or Approved is held back, while that phase may
// still pass within passingPhaseHold of when the node's records say it
// began; zero when the verdict is written now. A first write, a forced
// drain, a drain's retry (a drain that already failed once may fail again
// within seconds, and which attempt runs is news), a degraded reboot and
// any other phase are written at once, and so is a phase whose recorded
// start lies ahead of this controller's clock (another machine's), which
// no wait would make pass.
func holdUntil(s v1alpha1.NodeMaintenanceStatus, v verdict, now time.Time) time.Time {
	if v.phase != v1alpha1.PhaseDraining && v.phase != v1alpha1.PhaseApproved {
		return time.Time{}
	}
	if s.Phase != v1alpha1.PhaseRequested && s.Phase != v1alpha1.PhaseDraining || s.Phase == v.phase {
		return time.Time{}
	}
	if v.forced != "" || v.degraded != "" || v.retrying {
		return time.Time{}
	}
	began, ok := v.times[v.phase]
	if !ok || began.After(now) {
		return time.Time{}
	}
	if until := began.Add(passingPhaseHold); now.Before(until) {
		return until
	}
	return time.Time{}
}

// rebootingMessage is a rebooting request's message, from the daemon's
// word that it reboots until the node is back and Ready.
func rebootingMessage(node string) string {
	return fmt.Sprintf("node %s is drained and rebooting", node)
}

func failed(v verdict, reason, message string) verdict {
	v.phase, v.reason, v.message = v1alpha1.PhaseFailed, reason, message
	return v
}

// apply writes a verdict into a status, stamping the time of every phase
// reached for the first time. A request that fails gets only the times of
// the phases it really reached, and the time it failed.
func apply(s *v1alpha1.NodeMaintenanceStatus, v verdict, now time.Time) {
	// A message can carry what others wrote (a drain's blocking pods, a
	// daemon's state); the API holds at most 32 KiB of it.
	v.message, v.degraded = v1alpha1.FitMessage(v.message), v1alpha1.FitMessage(v.degraded)
	v.wait.message = v1alpha1.FitMessage(v.wait.message)
	s.Phase, s.Message = v.phase, v.message
	s.BootIDBefore, s.BootIDAfter = v.bootIDBefore, v.bootIDAfter
	t := metav1.NewTime(now)
	stamp := func(p v1alpha1.Phase) {
		if s.PhaseTimes.Get(p) != nil {
			return
		}
		// A time the node's records give, when it is not in the future
		// (another machine's clock) and not before a phase already passed.
		if at, ok := v.times[p]; ok && !at.After(now) && !at.Before(latest(s)) {
			s.PhaseTimes.Set(p, metav1.NewTime(at))
			return
		}
		s.PhaseTimes.Set(p, t)
	}
	if v.phase == v1alpha1.PhaseFailed {
		stamp(v1alpha1.PhaseFailed)
	} else {
		for _, p := range v1alpha1.PhaseOrder() {
			// A node settles only in a guarded pool: a request is stamped
			// Settling when it is seen there, never for a phase passed.
			if p != v1alpha1.PhaseSettling || v.phase == p {
				stamp(p)
			}
			if p == v.phase {
				break
			}
		}
	}

	cond := metav1.Condition{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionUnknown, Reason: string(v.phase), Message: v.message, LastTransitionTime: t}
	switch v.phase {
	case v1alpha1.PhaseSucceeded:
		cond.Status, cond.Reason = metav1.ConditionTrue, v1alpha1.RebootedReason
	case v1alpha1.PhaseFailed:
		cond.Status, cond.Reason = metav1.ConditionFalse, v.reason
	}
	meta.SetStatusCondition(&s.Conditions, cond)
	if v.phase == v1alpha1.PhaseRequested && v.wait.reason != "" {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.WaitingCondition, Status: metav1.ConditionTrue, Reason: v.wait.reason, Message: v.wait.message, LastTransitionTime: t})
	} else {
		meta.RemoveStatusCondition(&s.Conditions, v1alpha1.WaitingCondition)
	}
	if v.forced != "" {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.DrainForcedCondition, Status: metav1.ConditionTrue,
			Reason: v1alpha1.DrainForcedReason, Message: v1alpha1.FitMessage(v.forced), LastTransitionTime: t})
	}
	if h := v.health; h.status != "" {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.HealthyCondition, Status: h.status,
			Reason: h.reason, Message: v1alpha1.FitMessage(h.message), LastTransitionTime: t})
	}
	if v.degraded != "" {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.DegradedCondition, Status: metav1.ConditionTrue, Reason: v.degradedReason, Message: v.degraded, LastTransitionTime: t})
	} else {
		meta.RemoveStatusCondition(&s.Conditions, v1alpha1.DegradedCondition)
	}
}

// latest is the latest phase time the status has; zero when none.
func latest(s *v1alpha1.NodeMaintenanceStatus) time.Time {
	var last time.Time
	for _, p := range v1alpha1.PhaseOrder() {
		if t := s.PhaseTimes.Get(p); t != nil && t.Time.After(last) {
			last = t.Time
		}
	}
	return last
}

// recordedInEndedBoot reports whether nm records a request raised on the
// node (record) in a boot other than the node's current one: the boot its
// label names, which record sets at creation. Admission keeps the label to
// the operator (config/admission/request-sources-policy.yaml: nobody else
// may set or change kmaint.io/boot-id); and a record shown done changes no
// reboot, which the node's own annotations decide.
func recordedInEndedBoot(nm *v1alpha1.NodeMaintenance, current string) bool {
	boot := nm.Labels[v1alpha1.BootIDLabel]
	return nm.Spec.Source.RaisedOnNode() && boot != "" && current != "" && boot != v1alpha1.LabelValue(current)
}
