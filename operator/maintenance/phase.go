package maintenance

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/operator/api/protocol"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
)

// The NodeMaintenance condition types.
const (
	// ConditionSucceeded is Unknown while the request is open, True once the
	// node rebooted, False with the reason it failed.
	ConditionSucceeded = "Succeeded"
	// ConditionDegraded is True while the node's daemon reports that the
	// approved reboot did not happen.
	ConditionDegraded = "Degraded"
)

// Reasons of a Failed NodeMaintenance.
const (
	ReasonNodeNotFound = "NodeNotFound"
	ReasonDuplicate    = "Duplicate"
	ReasonRebooted     = "Rebooted"
)

// nodeFacts is what one reconcile read off the node of a NodeMaintenance.
type nodeFacts struct {
	exists bool
	bootID string
	ready  bool
	// requested is the node's reboot-requested value, whatever its boot.
	requested *protocol.Requested
	admission *protocol.Admission
	approved  string
	failure   *protocol.DrainFailure
	daemon    *protocol.DaemonState
}

func readNode(node *corev1.Node) nodeFacts {
	if node == nil {
		return nodeFacts{}
	}
	f := nodeFacts{exists: true, bootID: protocol.BootID(node), ready: protocol.Ready(node), approved: node.Annotations[protocol.RebootApproved]}
	// A malformed annotation reads as absent here; the gate reports it on
	// the pool and admits nothing on the strength of it.
	var req protocol.Requested
	if ok, err := protocol.Decode(node, protocol.RebootRequested, &req); ok && err == nil {
		f.requested = &req
	}
	var adm protocol.Admission
	if ok, err := protocol.Decode(node, protocol.Admitted, &adm); ok && err == nil {
		f.admission = &adm
	}
	var fail protocol.DrainFailure
	if ok, err := protocol.Decode(node, protocol.DrainFailed, &fail); ok && err == nil {
		f.failure = &fail
	}
	var st protocol.DaemonState
	if ok, err := protocol.Decode(node, protocol.State, &st); ok && err == nil {
		f.daemon = &st
	}
	return f
}

// verdict is where a NodeMaintenance should be: its phase, why, and the boot
// IDs learned on the way.
type verdict struct {
	phase        v1alpha1.Phase
	reason       string
	message      string
	bootIDBefore string
	bootIDAfter  string
	degraded     string
	// wait says why a Requested request is not admitted yet, if known.
	wait waiting
}

// decide computes a NodeMaintenance's phase from its node. It looks only at
// the state of the world, so a phase passed through while nobody watched is
// skipped, not lost. older names an older open NodeMaintenance for the same
// node that started in the API, if there is one. w says why the node's raised
// requests wait, as far as the node's pool tells (see waitOf).
func decide(nm *v1alpha1.NodeMaintenance, requestID string, f nodeFacts, older string, w waiting) verdict {
	s := nm.Status
	v := verdict{phase: s.Phase, bootIDBefore: s.BootIDBefore, bootIDAfter: s.BootIDAfter}
	if s.Phase.Done() {
		v.reason, v.message = "", s.Message
		return v
	}
	if !f.exists {
		return failed(v, ReasonNodeNotFound, fmt.Sprintf("node %s does not exist; nothing will be rebooted", nm.Spec.NodeName))
	}
	raised := f.requested != nil && f.requested.Has(requestID)
	// Only a request not yet raised or journaled can be refused: once the
	// node has it, the coming reboot satisfies it whatever else is open.
	if s.BootIDBefore == "" && older != "" && !raised && s.JournaledBootID == "" {
		return failed(v, ReasonDuplicate, fmt.Sprintf("node %s already has an open request, NodeMaintenance %s; this one will not be carried out", nm.Spec.NodeName, older))
	}
	if v.bootIDBefore == "" {
		switch {
		case raised:
			v.bootIDBefore = f.requested.BootID
		case s.JournaledBootID != "":
			// The daemon journaled it, and the node rebooted (or the
			// annotation changed) before the operator saw it raised.
			v.bootIDBefore = s.JournaledBootID
		default:
			v.phase, v.message = v1alpha1.PhasePending, fmt.Sprintf("waiting for node %s's daemon to raise the request", nm.Spec.NodeName)
			return v
		}
	}
	boot := v.bootIDBefore

	switch {
	case f.bootID != "" && f.bootID != boot && f.ready && (f.requested == nil || f.requested.BootID != boot):
		v.phase, v.bootIDAfter = v1alpha1.PhaseSucceeded, f.bootID
		v.message = fmt.Sprintf("node %s rebooted: boot %s, then %s", nm.Spec.NodeName, boot, f.bootID)
	case f.bootID != boot:
		v.phase, v.message = v1alpha1.PhaseRebooting, fmt.Sprintf("node %s is coming back with boot %s", nm.Spec.NodeName, f.bootID)
	case f.failure != nil && f.failure.BootID == boot && slices.Contains(f.failure.Requests, requestID):
		return failed(v, f.failure.Reason, f.failure.Message)
	case f.approved == boot:
		v.phase, v.message = v1alpha1.PhaseRebooting, fmt.Sprintf("node %s is drained and approved to reboot", nm.Spec.NodeName)
		if f.daemon != nil && f.daemon.Phase == protocol.DaemonDegraded && f.daemon.BootID == boot {
			v.degraded = f.daemon.Message
		}
	case f.admission != nil && f.admission.BootID == boot:
		v.phase, v.message = v1alpha1.PhaseDraining, fmt.Sprintf("node %s is admitted, cordoned and draining", nm.Spec.NodeName)
	default:
		v.phase, v.message = v1alpha1.PhaseRequested, fmt.Sprintf("node %s requests a reboot and waits for its pool to admit it", nm.Spec.NodeName)
		if w.reason != "" {
			v.wait = w
			v.message = fmt.Sprintf("node %s requests a reboot and waits: %s", nm.Spec.NodeName, w.message)
		}
	}
	return v
}

func failed(v verdict, reason, message string) verdict {
	v.phase, v.reason, v.message = v1alpha1.PhaseFailed, reason, message
	return v
}

// order lists the phases so that skipped ones get a timestamp too.
var order = []v1alpha1.Phase{
	v1alpha1.PhasePending, v1alpha1.PhaseRequested, v1alpha1.PhaseApproved,
	v1alpha1.PhaseDraining, v1alpha1.PhaseRebooting, v1alpha1.PhaseSucceeded,
}

// apply writes a verdict into a status, stamping the time of every phase
// reached for the first time. A request that fails gets only the times of
// the phases it really reached, and the time it failed.
func apply(s *v1alpha1.NodeMaintenanceStatus, v verdict, now time.Time) {
	s.Phase, s.Message = v.phase, v.message
	s.BootIDBefore, s.BootIDAfter = v.bootIDBefore, v.bootIDAfter
	t := metav1.NewTime(now)
	stamp := func(p **metav1.Time) {
		if *p == nil {
			*p = &t
		}
	}
	times := map[v1alpha1.Phase]**metav1.Time{
		v1alpha1.PhasePending:   &s.PhaseTimes.Pending,
		v1alpha1.PhaseRequested: &s.PhaseTimes.Requested,
		v1alpha1.PhaseApproved:  &s.PhaseTimes.Approved,
		v1alpha1.PhaseDraining:  &s.PhaseTimes.Draining,
		v1alpha1.PhaseRebooting: &s.PhaseTimes.Rebooting,
		v1alpha1.PhaseSucceeded: &s.PhaseTimes.Succeeded,
	}
	if v.phase == v1alpha1.PhaseFailed {
		stamp(&s.PhaseTimes.Failed)
	} else {
		for _, p := range order {
			stamp(times[p])
			if p == v.phase {
				break
			}
		}
	}

	cond := metav1.Condition{Type: ConditionSucceeded, Status: metav1.ConditionUnknown, Reason: string(v.phase), Message: v.message, LastTransitionTime: t}
	switch v.phase {
	case v1alpha1.PhaseSucceeded:
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonRebooted
	case v1alpha1.PhaseFailed:
		cond.Status, cond.Reason = metav1.ConditionFalse, v.reason
	}
	meta.SetStatusCondition(&s.Conditions, cond)
	if v.phase == v1alpha1.PhaseRequested && v.wait.reason != "" {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: ConditionWaiting, Status: metav1.ConditionTrue, Reason: v.wait.reason, Message: v.wait.message, LastTransitionTime: t})
	} else {
		meta.RemoveStatusCondition(&s.Conditions, ConditionWaiting)
	}
	if v.degraded != "" {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: ConditionDegraded, Status: metav1.ConditionTrue, Reason: "RebootNotObserved", Message: v.degraded, LastTransitionTime: t})
	} else {
		meta.RemoveStatusCondition(&s.Conditions, ConditionDegraded)
	}
}
