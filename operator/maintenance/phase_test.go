package maintenance

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

// t0 is when the request of every case was made.
var t0 = time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC)

// reqID is the id the request under test carries on the node.
const reqID = "uid-1"

// read is protocol.Read as the reconciler calls it: nil for no node.
func read(node *corev1.Node) *protocol.NodeState {
	if node == nil {
		return nil
	}
	st, _ := protocol.Read(node)
	return &st
}

// maintenanceIn returns the NodeMaintenance under test with this status.
func maintenanceIn(s v1alpha1.NodeMaintenanceStatus) *v1alpha1.NodeMaintenance {
	return &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: "nm-1", UID: types.UID(reqID)},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: "n1", Reason: "kernel update", Type: v1alpha1.RebootMaintenance, Source: v1alpha1.SourceAPI},
		Status:     s,
	}
}

// raisedIn is the status of a request the node raised in boot.
func raisedIn(phase v1alpha1.Phase, boot string) v1alpha1.NodeMaintenanceStatus {
	return v1alpha1.NodeMaintenanceStatus{Phase: phase, RequestID: reqID, BootIDBefore: boot}
}

// cancelledOn writes a reboot-requested annotation of boot that shows the
// request cancelled withdrawn and the others still raised.
func cancelledOn(boot, cancelled string, raised ...string) gen.NodeOption {
	r := protocol.Requested{BootID: boot, Requests: []protocol.Request{}, Cancelled: []string{cancelled}}
	for _, id := range raised {
		r.Requests = append(r.Requests, gen.Req(id, v1alpha1.SourceHost, t0))
	}
	return gen.Annotations(protocol.RebootRequested, protocol.Encode(r))
}

func TestDecide(t *testing.T) {
	cases := map[string]struct {
		// status is the NodeMaintenance's status before the reconcile.
		status v1alpha1.NodeMaintenanceStatus
		// node is the node as the reconcile reads it; nil means it does
		// not exist.
		node *corev1.Node
		// older names an older open API request for the same node.
		older string
		// wait is why the node's raised requests wait, as its pool tells.
		wait waiting

		// wantPhase is the phase the request should be in.
		wantPhase v1alpha1.Phase
		// wantReason is the failure reason; empty unless Failed.
		wantReason string
		// wantMessage is a substring of the message for a person.
		wantMessage string
		// wantBefore and wantAfter are the boot IDs recorded.
		wantBefore, wantAfter string
		// wantDegraded is the degraded message; empty means not degraded.
		wantDegraded string
		// wantDegradedReason is the Degraded condition's reason.
		wantDegradedReason string
		// wantWait is the Waiting reason carried; empty means none.
		wantWait string
	}{
		"requested and outside its windows says until when": {
			node:        gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID)),
			wait:        waiting{reason: v1alpha1.OutsideWindowReason, message: "outside the maintenance windows of pool p; the next opens at 2025-03-01T05:00:00Z", next: t0.Add(3 * time.Hour)},
			wantPhase:   v1alpha1.PhaseRequested,
			wantBefore:  "boot-0",
			wantMessage: "waits: outside the maintenance windows of pool p; the next opens at 2025-03-01T05:00:00Z",
			wantWait:    v1alpha1.OutsideWindowReason,
		},
		"a wait is not shown once the node is admitted": {
			status:     raisedIn(v1alpha1.PhaseRequested, "boot-0"),
			node:       gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.Admitted("boot-0", t0, reqID)),
			wait:       waiting{reason: v1alpha1.BudgetExhaustedReason, message: "pool p is full"},
			wantPhase:  v1alpha1.PhaseDraining,
			wantBefore: "boot-0",
		},
		"a wait is not shown while the daemon has not raised the request": {
			node:      gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, "host-1")),
			wait:      waiting{reason: v1alpha1.PausedReason, message: "pool p is paused"},
			wantPhase: v1alpha1.PhasePending,
		},
		"pending until the node raises the request": {
			node:        gen.Node("n1"),
			wantPhase:   v1alpha1.PhasePending,
			wantMessage: "waiting for node n1's daemon to raise the request",
		},
		"pending while the node raises only other requests": {
			node:      gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, "host-1")),
			wantPhase: v1alpha1.PhasePending,
		},
		"requested once raised, with the boot it was raised in": {
			node:        gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, "host-1", reqID)),
			wantPhase:   v1alpha1.PhaseRequested,
			wantBefore:  "boot-0",
			wantMessage: "waits for its pool to admit it",
		},
		"requested stays requested": {
			status:     raisedIn(v1alpha1.PhaseRequested, "boot-0"),
			node:       gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID)),
			wantPhase:  v1alpha1.PhaseRequested,
			wantBefore: "boot-0",
		},
		"an admission of another boot is not this request's": {
			status:     raisedIn(v1alpha1.PhaseRequested, "boot-0"),
			node:       gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.Admitted("boot-old", t0, "x")),
			wantPhase:  v1alpha1.PhaseRequested,
			wantBefore: "boot-0",
		},
		"draining when admitted for that boot": {
			status:      raisedIn(v1alpha1.PhaseRequested, "boot-0"),
			node:        gen.Node("n1", gen.Unschedulable(), gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.Admitted("boot-0", t0, reqID)),
			wantPhase:   v1alpha1.PhaseDraining,
			wantBefore:  "boot-0",
			wantMessage: "cordoned and draining",
		},
		"draining straight from pending when admitted before anyone looked": {
			node:       gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.Admitted("boot-0", t0, reqID)),
			wantPhase:  v1alpha1.PhaseDraining,
			wantBefore: "boot-0",
		},
		"approved when drained and approved, until the daemon says it reboots": {
			status:      raisedIn(v1alpha1.PhaseDraining, "boot-0"),
			node:        gen.Node("n1", gen.Unschedulable(), gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.Admitted("boot-0", t0, reqID), gen.Approved("boot-0")),
			wantPhase:   v1alpha1.PhaseApproved,
			wantBefore:  "boot-0",
			wantMessage: "drained and approved to reboot",
		},
		"an approval of another boot is not acted on": {
			status:     raisedIn(v1alpha1.PhaseDraining, "boot-0"),
			node:       gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.Admitted("boot-0", t0, reqID), gen.Approved("boot-old")),
			wantPhase:  v1alpha1.PhaseDraining,
			wantBefore: "boot-0",
		},
		"not succeeded while Ready with the old boot ID": {
			status:     raisedIn(v1alpha1.PhaseRebooting, "boot-0"),
			node:       gen.Node("n1", gen.Approved("boot-0")),
			wantPhase:  v1alpha1.PhaseRebooting,
			wantBefore: "boot-0",
		},
		"rebooting while NotReady with the old boot": {
			status:     raisedIn(v1alpha1.PhaseRebooting, "boot-0"),
			node:       gen.Node("n1", gen.NotReady(), gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.Approved("boot-0")),
			wantPhase:  v1alpha1.PhaseRebooting,
			wantBefore: "boot-0",
		},
		"rebooting while the new boot is not Ready": {
			status:      raisedIn(v1alpha1.PhaseRebooting, "boot-0"),
			node:        gen.Node("n1", gen.BootID("boot-1"), gen.NotReady(), gen.Approved("boot-0")),
			wantPhase:   v1alpha1.PhaseRebooting,
			wantBefore:  "boot-0",
			wantMessage: "drained and rebooting",
		},
		"rebooting while the daemon still shows the old boot's request": {
			status:     raisedIn(v1alpha1.PhaseRebooting, "boot-0"),
			node:       gen.Node("n1", gen.BootID("boot-1"), gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.Approved("boot-0")),
			wantPhase:  v1alpha1.PhaseRebooting,
			wantBefore: "boot-0",
		},
		"succeeded with the new boot once Ready": {
			status:      raisedIn(v1alpha1.PhaseRebooting, "boot-0"),
			node:        gen.Node("n1", gen.BootID("boot-1"), gen.Approved("boot-0")),
			wantPhase:   v1alpha1.PhaseSucceeded,
			wantBefore:  "boot-0",
			wantAfter:   "boot-1",
			wantMessage: "rebooted: boot boot-0, then boot-1",
		},
		"succeeded though the new boot already has requests of its own": {
			status:     raisedIn(v1alpha1.PhaseRebooting, "boot-0"),
			node:       gen.Node("n1", gen.BootID("boot-1"), gen.RequestedIDs("boot-1", v1alpha1.SourceAPI, t0, "host-2")),
			wantPhase:  v1alpha1.PhaseSucceeded,
			wantBefore: "boot-0",
			wantAfter:  "boot-1",
		},
		"succeeded by a reboot nobody watched": {
			status:     raisedIn(v1alpha1.PhaseRequested, "boot-0"),
			node:       gen.Node("n1", gen.BootID("boot-1")),
			wantPhase:  v1alpha1.PhaseSucceeded,
			wantBefore: "boot-0",
			wantAfter:  "boot-1",
		},
		"failed when the node does not exist": {
			node:        nil,
			wantPhase:   v1alpha1.PhaseFailed,
			wantReason:  v1alpha1.NodeNotFoundReason,
			wantMessage: "node n1 does not exist",
		},
		"failed when the node goes away mid-way": {
			status:     raisedIn(v1alpha1.PhaseDraining, "boot-0"),
			node:       nil,
			wantPhase:  v1alpha1.PhaseFailed,
			wantReason: v1alpha1.NodeNotFoundReason,
			wantBefore: "boot-0",
		},
		"failed as a duplicate of an older open request": {
			node:        gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, "older-uid")),
			older:       "nm-0",
			wantPhase:   v1alpha1.PhaseFailed,
			wantReason:  v1alpha1.DuplicateReason,
			wantMessage: "already has an open request, NodeMaintenance nm-0",
		},
		"not a duplicate once raised and recorded": {
			status:     raisedIn(v1alpha1.PhaseRequested, "boot-0"),
			node:       gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, "older-uid", reqID)),
			older:      "nm-0",
			wantPhase:  v1alpha1.PhaseRequested,
			wantBefore: "boot-0",
		},
		"not a duplicate once raised, though not yet recorded": {
			node:       gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, "older-uid", reqID)),
			older:      "nm-0",
			wantPhase:  v1alpha1.PhaseRequested,
			wantBefore: "boot-0",
		},
		"failed with the drain's reason when the failed drain covers the request": {
			status:      raisedIn(v1alpha1.PhaseDraining, "boot-0"),
			node:        gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.DrainFailed("boot-0", t0, "pod web-0 blocked the drain for 10m", reqID)),
			wantPhase:   v1alpha1.PhaseFailed,
			wantReason:  "DrainTimeout",
			wantMessage: "pod web-0 blocked the drain for 10m",
			wantBefore:  "boot-0",
		},
		"a failed drain of other requests leaves this one requested": {
			status:     raisedIn(v1alpha1.PhaseRequested, "boot-0"),
			node:       gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, "host-1", reqID), gen.DrainFailed("boot-0", t0, "pod web-0 blocked the drain for 10m", "host-1")),
			wantPhase:  v1alpha1.PhaseRequested,
			wantBefore: "boot-0",
		},
		"a failed drain of an earlier boot leaves this one requested": {
			status:     raisedIn(v1alpha1.PhaseRequested, "boot-0"),
			node:       gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.DrainFailed("boot-old", t0, "pod web-0 blocked the drain for 10m", reqID)),
			wantPhase:  v1alpha1.PhaseRequested,
			wantBefore: "boot-0",
		},
		"degraded when the daemon says the approved reboot did not happen": {
			status:             raisedIn(v1alpha1.PhaseRebooting, "boot-0"),
			node:               gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.Approved("boot-0"), gen.DaemonState(protocol.DaemonDegraded, "boot-0", "logind refused the reboot", t0)),
			wantPhase:          v1alpha1.PhaseRebooting,
			wantBefore:         "boot-0",
			wantDegraded:       "logind refused the reboot",
			wantDegradedReason: v1alpha1.RebootNotObservedReason,
		},
		"back without its daemon, waited for: rebooting": {
			status: raisedIn(v1alpha1.PhaseRebooting, "boot-0"),
			node: gen.Node("n1", gen.BootID("boot-1"), gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.Approved("boot-0"),
				gen.RebootUnconfirmed("boot-0", "boot-1", t0)),
			wantPhase:   v1alpha1.PhaseRebooting,
			wantMessage: "drained and rebooting",
			wantBefore:  "boot-0",
		},
		"completed without its daemon: succeeded, and degraded saying so": {
			status:             raisedIn(v1alpha1.PhaseRebooting, "boot-0"),
			node:               gen.Node("n1", gen.BootID("boot-1"), gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.RebootUnconfirmed("boot-0", "boot-1", t0)),
			wantPhase:          v1alpha1.PhaseSucceeded,
			wantMessage:        "node n1 rebooted: boot boot-0, then boot-1; its daemon did not confirm the reboot",
			wantBefore:         "boot-0",
			wantAfter:          "boot-1",
			wantDegraded:       protocol.UnconfirmedReboot{ApprovedBoot: "boot-0", BootID: "boot-1", Since: t0}.Message(),
			wantDegradedReason: v1alpha1.DaemonMissingReason,
		},
		"completed without the daemon, but not Ready now: rebooting": {
			status:      raisedIn(v1alpha1.PhaseRebooting, "boot-0"),
			node:        gen.Node("n1", gen.BootID("boot-1"), gen.NotReady(), gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.RebootUnconfirmed("boot-0", "boot-1", t0)),
			wantPhase:   v1alpha1.PhaseRebooting,
			wantMessage: "drained and rebooting",
			wantBefore:  "boot-0",
		},
		"a missing daemon after another boot's reboot proves nothing of this one": {
			status:      raisedIn(v1alpha1.PhaseRebooting, "boot-0"),
			node:        gen.Node("n1", gen.BootID("boot-1"), gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.RebootUnconfirmed("boot-old", "boot-0", t0)),
			wantPhase:   v1alpha1.PhaseRebooting,
			wantMessage: "drained and rebooting",
			wantBefore:  "boot-0",
		},
		"not degraded by a daemon state of another boot": {
			status:     raisedIn(v1alpha1.PhaseRebooting, "boot-0"),
			node:       gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.Approved("boot-0"), gen.DaemonState(protocol.DaemonDegraded, "boot-old", "old trouble", t0)),
			wantPhase:  v1alpha1.PhaseRebooting,
			wantBefore: "boot-0",
		},
		"not degraded while the daemon is rebooting": {
			status:     raisedIn(v1alpha1.PhaseRebooting, "boot-0"),
			node:       gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.Approved("boot-0"), gen.DaemonState(protocol.DaemonRebooting, "boot-0", "rebooting", t0)),
			wantPhase:  v1alpha1.PhaseRebooting,
			wantBefore: "boot-0",
		},
		"cancelled on the node before its approval: failed, Cancelled": {
			status:      raisedIn(v1alpha1.PhaseRequested, "boot-0"),
			node:        gen.Node("n1", cancelledOn("boot-0", reqID)),
			wantPhase:   v1alpha1.PhaseFailed,
			wantReason:  v1alpha1.CancelledReason,
			wantMessage: "cancelled on node n1 (boot boot-0) before its reboot was approved",
			wantBefore:  "boot-0",
		},
		"cancelled while draining, another request still raised: failed, Cancelled": {
			status:     raisedIn(v1alpha1.PhaseDraining, "boot-0"),
			node:       gen.Node("n1", cancelledOn("boot-0", reqID, "host-1"), gen.Admitted("boot-0", t0, reqID, "host-1")),
			wantPhase:  v1alpha1.PhaseFailed,
			wantReason: v1alpha1.CancelledReason,
			wantBefore: "boot-0",
		},
		"cancelled before it was seen raised: failed, Cancelled": {
			node:       gen.Node("n1", cancelledOn("boot-0", reqID)),
			wantPhase:  v1alpha1.PhaseFailed,
			wantReason: v1alpha1.CancelledReason,
		},
		"another request cancelled: this one is not": {
			status:     raisedIn(v1alpha1.PhaseRequested, "boot-0"),
			node:       gen.Node("n1", cancelledOn("boot-0", "host-1", reqID)),
			wantPhase:  v1alpha1.PhaseRequested,
			wantBefore: "boot-0",
		},
		"succeeded never changes": {
			status: v1alpha1.NodeMaintenanceStatus{
				Phase: v1alpha1.PhaseSucceeded, RequestID: reqID, BootIDBefore: "boot-0", BootIDAfter: "boot-1", Message: "done",
			},
			// A node that looks like it has not rebooted at all.
			node:        gen.Node("n1", gen.BootID("boot-0"), gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID)),
			wantPhase:   v1alpha1.PhaseSucceeded,
			wantMessage: "done",
			wantBefore:  "boot-0",
			wantAfter:   "boot-1",
		},
		"failed never changes, not even when the node appears": {
			status: v1alpha1.NodeMaintenanceStatus{
				Phase: v1alpha1.PhaseFailed, RequestID: reqID, Message: "node n1 does not exist",
			},
			node:        gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID)),
			wantPhase:   v1alpha1.PhaseFailed,
			wantMessage: "node n1 does not exist",
		},
		"failed never changes, not even when the node reboots": {
			status:      v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseFailed, RequestID: reqID, BootIDBefore: "boot-0", Message: "drain timed out"},
			node:        gen.Node("n1", gen.BootID("boot-1")),
			wantPhase:   v1alpha1.PhaseFailed,
			wantMessage: "drain timed out",
			wantBefore:  "boot-0",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got := decide(maintenanceIn(tc.status), reqID, read(tc.node), tc.older, tc.wait, guard{})
			g.Expect(got.phase).To(Equal(tc.wantPhase), "phase (message %q)", got.message)
			g.Expect(got.reason).To(Equal(tc.wantReason), "reason")
			g.Expect(got.message).To(ContainSubstring(tc.wantMessage), "message")
			g.Expect(got.bootIDBefore).To(Equal(tc.wantBefore), "bootIDBefore")
			g.Expect(got.bootIDAfter).To(Equal(tc.wantAfter), "bootIDAfter")
			g.Expect(got.degraded).To(Equal(tc.wantDegraded), "degraded")
			g.Expect(got.degradedReason).To(Equal(tc.wantDegradedReason), "degraded reason")
			g.Expect(got.wait.reason).To(Equal(tc.wantWait), "wait")
		})
	}
}

func TestApply(t *testing.T) {
	before := t0.Add(-time.Hour)
	now := t0
	earlier := metav1.NewTime(before)
	cases := map[string]struct {
		// status is the status before apply.
		status v1alpha1.NodeMaintenanceStatus
		// verdict is what decide found.
		verdict verdict

		// wantStamped are the phases whose time is now, and wantKept those
		// whose time stays the earlier one; every other phase has none.
		wantStamped, wantKept []v1alpha1.Phase
		// wantSucceeded is the Succeeded condition's status and reason.
		wantSucceeded       metav1.ConditionStatus
		wantSucceededReason string
		// wantDegraded is the Degraded condition's message; empty means no
		// Degraded condition.
		wantDegraded string
	}{
		"pending": {
			verdict:             verdict{phase: v1alpha1.PhasePending, message: "waiting"},
			wantStamped:         []v1alpha1.Phase{v1alpha1.PhasePending},
			wantSucceeded:       metav1.ConditionUnknown,
			wantSucceededReason: "Pending",
		},
		"requested stamps pending too": {
			verdict:             verdict{phase: v1alpha1.PhaseRequested, bootIDBefore: "boot-0"},
			wantStamped:         []v1alpha1.Phase{v1alpha1.PhasePending, v1alpha1.PhaseRequested},
			wantSucceeded:       metav1.ConditionUnknown,
			wantSucceededReason: "Requested",
		},
		"draining stamps draining only: approval comes after the drain": {
			status:              v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseRequested, PhaseTimes: v1alpha1.PhaseTimes{Pending: &earlier, Requested: &earlier}},
			verdict:             verdict{phase: v1alpha1.PhaseDraining, bootIDBefore: "boot-0"},
			wantKept:            []v1alpha1.Phase{v1alpha1.PhasePending, v1alpha1.PhaseRequested},
			wantStamped:         []v1alpha1.Phase{v1alpha1.PhaseDraining},
			wantSucceeded:       metav1.ConditionUnknown,
			wantSucceededReason: "Draining",
		},
		"approved stamps draining on the way": {
			status:              v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseRequested, PhaseTimes: v1alpha1.PhaseTimes{Pending: &earlier, Requested: &earlier}},
			verdict:             verdict{phase: v1alpha1.PhaseApproved, bootIDBefore: "boot-0"},
			wantKept:            []v1alpha1.Phase{v1alpha1.PhasePending, v1alpha1.PhaseRequested},
			wantStamped:         []v1alpha1.Phase{v1alpha1.PhaseDraining, v1alpha1.PhaseApproved},
			wantSucceeded:       metav1.ConditionUnknown,
			wantSucceededReason: "Approved",
		},
		"rebooting from nothing stamps every phase up to it": {
			verdict:             verdict{phase: v1alpha1.PhaseRebooting, bootIDBefore: "boot-0"},
			wantStamped:         []v1alpha1.Phase{v1alpha1.PhasePending, v1alpha1.PhaseRequested, v1alpha1.PhaseApproved, v1alpha1.PhaseDraining, v1alpha1.PhaseRebooting},
			wantSucceeded:       metav1.ConditionUnknown,
			wantSucceededReason: "Rebooting",
		},
		"succeeded sets Succeeded True": {
			status: v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseRebooting, PhaseTimes: v1alpha1.PhaseTimes{
				Pending: &earlier, Requested: &earlier, Approved: &earlier, Draining: &earlier, Rebooting: &earlier,
			}},
			verdict:             verdict{phase: v1alpha1.PhaseSucceeded, bootIDBefore: "boot-0", bootIDAfter: "boot-1", message: "rebooted"},
			wantKept:            []v1alpha1.Phase{v1alpha1.PhasePending, v1alpha1.PhaseRequested, v1alpha1.PhaseApproved, v1alpha1.PhaseDraining, v1alpha1.PhaseRebooting},
			wantStamped:         []v1alpha1.Phase{v1alpha1.PhaseSucceeded},
			wantSucceeded:       metav1.ConditionTrue,
			wantSucceededReason: v1alpha1.RebootedReason,
		},
		"succeeded unobserved stamps the skipped phases": {
			status:              v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseRequested, PhaseTimes: v1alpha1.PhaseTimes{Pending: &earlier, Requested: &earlier}},
			verdict:             verdict{phase: v1alpha1.PhaseSucceeded, bootIDBefore: "boot-0", bootIDAfter: "boot-1"},
			wantKept:            []v1alpha1.Phase{v1alpha1.PhasePending, v1alpha1.PhaseRequested},
			wantStamped:         []v1alpha1.Phase{v1alpha1.PhaseApproved, v1alpha1.PhaseDraining, v1alpha1.PhaseRebooting, v1alpha1.PhaseSucceeded},
			wantSucceeded:       metav1.ConditionTrue,
			wantSucceededReason: v1alpha1.RebootedReason,
		},
		"failed stamps only the failure and sets Succeeded False": {
			verdict:             verdict{phase: v1alpha1.PhaseFailed, reason: v1alpha1.NodeNotFoundReason, message: "node n1 does not exist"},
			wantStamped:         []v1alpha1.Phase{v1alpha1.PhaseFailed},
			wantSucceeded:       metav1.ConditionFalse,
			wantSucceededReason: v1alpha1.NodeNotFoundReason,
		},
		"failed mid-way keeps the phases reached": {
			status:              v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseDraining, PhaseTimes: v1alpha1.PhaseTimes{Pending: &earlier, Requested: &earlier, Approved: &earlier, Draining: &earlier}},
			verdict:             verdict{phase: v1alpha1.PhaseFailed, reason: "DrainTimeout", message: "pod web-0 blocked the drain", bootIDBefore: "boot-0"},
			wantKept:            []v1alpha1.Phase{v1alpha1.PhasePending, v1alpha1.PhaseRequested, v1alpha1.PhaseApproved, v1alpha1.PhaseDraining},
			wantStamped:         []v1alpha1.Phase{v1alpha1.PhaseFailed},
			wantSucceeded:       metav1.ConditionFalse,
			wantSucceededReason: "DrainTimeout",
		},
		"degraded sets the Degraded condition": {
			status:              v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseRebooting, PhaseTimes: v1alpha1.PhaseTimes{Pending: &earlier, Requested: &earlier, Approved: &earlier, Draining: &earlier, Rebooting: &earlier}},
			verdict:             verdict{phase: v1alpha1.PhaseRebooting, bootIDBefore: "boot-0", degraded: "logind refused the reboot", degradedReason: v1alpha1.RebootNotObservedReason},
			wantKept:            []v1alpha1.Phase{v1alpha1.PhasePending, v1alpha1.PhaseRequested, v1alpha1.PhaseApproved, v1alpha1.PhaseDraining, v1alpha1.PhaseRebooting},
			wantSucceeded:       metav1.ConditionUnknown,
			wantSucceededReason: "Rebooting",
			wantDegraded:        "logind refused the reboot",
		},
		"degraded clears once the daemon stops saying so": {
			status: v1alpha1.NodeMaintenanceStatus{
				Phase:      v1alpha1.PhaseRebooting,
				PhaseTimes: v1alpha1.PhaseTimes{Pending: &earlier, Requested: &earlier, Approved: &earlier, Draining: &earlier, Rebooting: &earlier},
				Conditions: []metav1.Condition{{Type: v1alpha1.DegradedCondition, Status: metav1.ConditionTrue, Reason: "RebootNotObserved", Message: "old", LastTransitionTime: earlier}},
			},
			verdict:             verdict{phase: v1alpha1.PhaseRebooting, bootIDBefore: "boot-0"},
			wantKept:            []v1alpha1.Phase{v1alpha1.PhasePending, v1alpha1.PhaseRequested, v1alpha1.PhaseApproved, v1alpha1.PhaseDraining, v1alpha1.PhaseRebooting},
			wantSucceeded:       metav1.ConditionUnknown,
			wantSucceededReason: "Rebooting",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s := tc.status.DeepCopy()
			apply(s, tc.verdict, now)

			g.Expect(s.Phase).To(Equal(tc.verdict.phase))
			g.Expect(s.Message).To(Equal(tc.verdict.message))
			g.Expect(s.BootIDBefore).To(Equal(tc.verdict.bootIDBefore))
			g.Expect(s.BootIDAfter).To(Equal(tc.verdict.bootIDAfter))

			times := map[v1alpha1.Phase]*metav1.Time{
				v1alpha1.PhasePending:   s.PhaseTimes.Pending,
				v1alpha1.PhaseRequested: s.PhaseTimes.Requested,
				v1alpha1.PhaseApproved:  s.PhaseTimes.Approved,
				v1alpha1.PhaseDraining:  s.PhaseTimes.Draining,
				v1alpha1.PhaseRebooting: s.PhaseTimes.Rebooting,
				v1alpha1.PhaseSucceeded: s.PhaseTimes.Succeeded,
				v1alpha1.PhaseFailed:    s.PhaseTimes.Failed,
			}
			want := map[v1alpha1.Phase]time.Time{}
			for _, p := range tc.wantStamped {
				want[p] = now
			}
			for _, p := range tc.wantKept {
				want[p] = before
			}
			for p, got := range times {
				w, ok := want[p]
				if !ok {
					g.Expect(got).To(BeNil(), "phase %s has no time", p)
					continue
				}
				g.Expect(got).NotTo(BeNil(), "phase %s has a time", p)
				g.Expect(got.Time).To(BeTemporally("==", w), "time of phase %s", p)
			}

			c := meta.FindStatusCondition(s.Conditions, v1alpha1.SucceededCondition)
			g.Expect(c).NotTo(BeNil(), "Succeeded condition")
			g.Expect(c.Status).To(Equal(tc.wantSucceeded), "Succeeded status")
			g.Expect(c.Reason).To(Equal(tc.wantSucceededReason), "Succeeded reason")
			g.Expect(c.Message).To(Equal(tc.verdict.message), "Succeeded message")

			d := meta.FindStatusCondition(s.Conditions, v1alpha1.DegradedCondition)
			if tc.wantDegraded == "" {
				g.Expect(d).To(BeNil(), "no Degraded condition")
				return
			}
			g.Expect(d).NotTo(BeNil(), "Degraded condition")
			g.Expect(d.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(d.Reason).To(Equal(tc.verdict.degradedReason))
			g.Expect(d.Message).To(Equal(tc.wantDegraded))
		})
	}
}

// TestDecideThenApplyWalksThePhases follows one request down the whole path,
// one reconcile per step of the node, as the controller does.
func TestDecideThenApplyWalksThePhases(t *testing.T) {
	g := NewWithT(t)
	nm := maintenanceIn(v1alpha1.NodeMaintenanceStatus{})
	steps := []struct {
		// node is the node at this step.
		node *corev1.Node
		// want is the phase after this step.
		want v1alpha1.Phase
	}{
		{gen.Node("n1"), v1alpha1.PhasePending},
		{gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID)), v1alpha1.PhaseRequested},
		{gen.Node("n1", gen.Unschedulable(), gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.Admitted("boot-0", t0, reqID)), v1alpha1.PhaseDraining},
		{gen.Node("n1", gen.Unschedulable(), gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.Admitted("boot-0", t0, reqID), gen.Approved("boot-0")), v1alpha1.PhaseApproved},
		{gen.Node("n1", gen.Unschedulable(), gen.NotReady(), gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.Admitted("boot-0", t0, reqID), gen.Approved("boot-0"), gen.DaemonState(protocol.DaemonRebooting, "boot-0", "rebooting", t0)), v1alpha1.PhaseRebooting},
		{gen.Node("n1", gen.Unschedulable(), gen.BootID("boot-1"), gen.NotReady(), gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.Admitted("boot-0", t0, reqID), gen.Approved("boot-0")), v1alpha1.PhaseRebooting},
		{gen.Node("n1", gen.Unschedulable(), gen.BootID("boot-1"), gen.Admitted("boot-0", t0, reqID), gen.Approved("boot-0")), v1alpha1.PhaseSucceeded},
		// After success nothing the node does changes the record.
		{nil, v1alpha1.PhaseSucceeded},
	}
	for i, step := range steps {
		now := t0.Add(time.Duration(i) * time.Minute)
		v := decide(nm, reqID, read(step.node), "", waiting{}, guard{})
		if !nm.Status.Phase.Done() {
			apply(&nm.Status, v, now)
		}
		g.Expect(nm.Status.Phase).To(Equal(step.want), "step %d", i)
	}
	g.Expect(nm.Status.BootIDBefore).To(Equal("boot-0"))
	g.Expect(nm.Status.BootIDAfter).To(Equal("boot-1"))
	pt := nm.Status.PhaseTimes
	g.Expect(pt.Pending.Time).To(Equal(t0))
	g.Expect(pt.Requested.Time).To(Equal(t0.Add(time.Minute)))
	g.Expect(pt.Draining.Time).To(Equal(t0.Add(2 * time.Minute)))
	g.Expect(pt.Approved.Time).To(Equal(t0.Add(3*time.Minute)), "approved once drained, before the daemon reboots")
	g.Expect(pt.Rebooting.Time).To(Equal(t0.Add(4 * time.Minute)))
	g.Expect(pt.Succeeded.Time).To(Equal(t0.Add(6 * time.Minute)))
	g.Expect(pt.Failed).To(BeNil())
	g.Expect(meta.IsStatusConditionTrue(nm.Status.Conditions, v1alpha1.SucceededCondition)).To(BeTrue())
}

// A reboot's steps can come faster than the controller looks: a request
// seen Requested and next seen Rebooting takes its draining and approved
// times from the gate's admission, not from when it was looked at.
func TestPhasesNotSeenTakeTheirTimesFromTheAdmission(t *testing.T) {
	g := NewWithT(t)
	nm := maintenanceIn(v1alpha1.NodeMaintenanceStatus{})
	requested := gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID))
	apply(&nm.Status, decide(nm, reqID, read(requested), "", waiting{}, guard{}), t0.Add(time.Minute))
	g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseRequested))

	admitted, approved := t0.Add(2*time.Minute), t0.Add(3*time.Minute)
	rebooting := gen.Node("n1", gen.Unschedulable(), gen.NotReady(), gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID),
		admittedApproved("boot-0", admitted, approved, reqID), gen.Approved("boot-0"),
		gen.DaemonState(protocol.DaemonRebooting, "boot-0", "rebooting", approved))
	now := t0.Add(5 * time.Minute)
	apply(&nm.Status, decide(nm, reqID, read(rebooting), "", waiting{}, guard{}), now)
	g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseRebooting))
	pt := nm.Status.PhaseTimes
	g.Expect(pt.Draining.Time).To(Equal(admitted))
	g.Expect(pt.Approved.Time).To(Equal(approved))
	g.Expect(pt.Rebooting.Time).To(Equal(now))

	// Times that cannot be right (from the future, or before the request
	// was seen) are not taken.
	nm = maintenanceIn(v1alpha1.NodeMaintenanceStatus{})
	apply(&nm.Status, decide(nm, reqID, read(requested), "", waiting{}, guard{}), t0.Add(time.Minute))
	skewed := gen.Node("n1", gen.Unschedulable(), gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID),
		admittedApproved("boot-0", t0, now.Add(time.Hour), reqID), gen.Approved("boot-0"))
	apply(&nm.Status, decide(nm, reqID, read(skewed), "", waiting{}, guard{}), now)
	g.Expect(nm.Status.PhaseTimes.Draining.Time).To(Equal(now))
	g.Expect(nm.Status.PhaseTimes.Approved.Time).To(Equal(now))
}

func admittedApproved(boot string, admitted, approved time.Time, ids ...string) gen.NodeOption {
	return gen.Annotations(protocol.Admitted, protocol.Encode(protocol.Admission{BootID: boot, Requests: ids, Time: admitted, ApprovedAt: approved}))
}

// TestComingBackCostsNoWrite: a rebooting request whose node shows its new
// boot, not yet Ready, keeps the status it had, so the controller writes
// nothing for that step of every reboot.
func TestComingBackCostsNoWrite(t *testing.T) {
	g := NewWithT(t)
	var rebooting v1alpha1.NodeMaintenanceStatus
	nm := maintenanceIn(raisedIn(v1alpha1.PhaseApproved, "boot-0"))
	daemonRebooting := gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.Approved("boot-0"),
		gen.DaemonState(protocol.DaemonRebooting, "boot-0", "", t0))
	v := decide(nm, reqID, read(daemonRebooting), "", waiting{}, guard{})
	g.Expect(v.phase).To(Equal(v1alpha1.PhaseRebooting))
	nm.Status.DeepCopyInto(&rebooting)
	apply(&rebooting, v, t0)

	nm.Status = *rebooting.DeepCopy()
	back := gen.Node("n1", gen.BootID("boot-1"), gen.NotReady(), gen.Approved("boot-0"))
	v = decide(nm, reqID, read(back), "", waiting{}, guard{})
	after := *rebooting.DeepCopy()
	apply(&after, v, t0.Add(time.Minute))
	g.Expect(after).To(Equal(rebooting))
}

func TestHoldUntil(t *testing.T) {
	began := t0.Add(time.Minute)
	hold := began.Add(passingPhaseHold)
	status := func(p v1alpha1.Phase) v1alpha1.NodeMaintenanceStatus { return v1alpha1.NodeMaintenanceStatus{Phase: p} }
	entering := func(p v1alpha1.Phase, at time.Time) verdict {
		return verdict{phase: p, times: map[v1alpha1.Phase]time.Time{p: at}}
	}
	cases := map[string]struct {
		status v1alpha1.NodeMaintenanceStatus
		v      verdict
		now    time.Time
		want   time.Time
	}{
		"a drain just begun is held until it has lasted the hold": {
			status: status(v1alpha1.PhaseRequested), v: entering(v1alpha1.PhaseDraining, began), now: began, want: hold,
		},
		"an approval just given is held": {
			status: status(v1alpha1.PhaseDraining), v: entering(v1alpha1.PhaseApproved, began), now: began.Add(time.Second), want: hold,
		},
		"from Requested straight to Approved is held too": {
			status: status(v1alpha1.PhaseRequested), v: entering(v1alpha1.PhaseApproved, began), now: began, want: hold,
		},
		"a drain that has lasted the hold is written": {
			status: status(v1alpha1.PhaseRequested), v: entering(v1alpha1.PhaseDraining, began), now: hold,
		},
		"a first write is never held": {
			status: status(""), v: entering(v1alpha1.PhaseDraining, began), now: began,
		},
		"nor one from Pending": {
			status: status(v1alpha1.PhasePending), v: entering(v1alpha1.PhaseDraining, began), now: began,
		},
		"a change within the phase (a drain's next attempt) is written": {
			status: status(v1alpha1.PhaseDraining), v: entering(v1alpha1.PhaseDraining, began), now: began,
		},
		"Rebooting is written at once": {
			status: status(v1alpha1.PhaseApproved), v: entering(v1alpha1.PhaseRebooting, began), now: began,
		},
		"a forced drain is written at once": {
			status: status(v1alpha1.PhaseRequested), v: func() verdict { v := entering(v1alpha1.PhaseDraining, began); v.forced = "forced"; return v }(), now: began,
		},
		"a drain's retry is written at once": {
			status: status(v1alpha1.PhaseRequested), v: func() verdict { v := entering(v1alpha1.PhaseDraining, began); v.retrying = true; return v }(), now: began,
		},
		"a degraded approval is written at once": {
			status: status(v1alpha1.PhaseDraining), v: func() verdict { v := entering(v1alpha1.PhaseApproved, began); v.degraded = "not back"; return v }(), now: began,
		},
		"a phase with no recorded start is written at once": {
			status: status(v1alpha1.PhaseDraining), v: verdict{phase: v1alpha1.PhaseApproved}, now: began,
		},
		"a start ahead of this clock is written at once, not held without end": {
			status: status(v1alpha1.PhaseRequested), v: entering(v1alpha1.PhaseDraining, began.Add(time.Hour)), now: began,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(holdUntil(tc.status, tc.v, tc.now)).To(Equal(tc.want))
		})
	}
}

// A request waiting for its pool's budget keeps that wait through a slot
// freed for a moment (a pool status written between one reboot completing
// and the next admission): its status is not written again, and it stops
// waiting once admitted. Another reason to wait replaces the budget's.
func TestAWaitForTheBudgetOutlastsASlotFreedForAMoment(t *testing.T) {
	g := NewWithT(t)
	nm := maintenanceIn(v1alpha1.NodeMaintenanceStatus{})
	requested := gen.Node("n1", gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID))
	budget := waiting{reason: v1alpha1.BudgetExhaustedReason, message: "pool a has as many nodes unavailable as it allows (1); it waits its turn"}
	apply(&nm.Status, decide(nm, reqID, read(requested), "", budget, guard{}), t0)
	g.Expect(meta.IsStatusConditionTrue(nm.Status.Conditions, v1alpha1.WaitingCondition)).To(BeTrue())
	waitingStatus := *nm.Status.DeepCopy()

	// The pool shows a free slot: the wait chain finds nothing.
	freed := *nm.Status.DeepCopy()
	apply(&freed, decide(nm, reqID, read(requested), "", waiting{}, guard{}), t0.Add(time.Second))
	g.Expect(freed).To(Equal(waitingStatus), "a free slot alone rewrites the waiting request")

	// Another reason replaces it.
	window := waiting{reason: v1alpha1.OutsideWindowReason, message: "outside its windows"}
	other := *nm.Status.DeepCopy()
	apply(&other, decide(nm, reqID, read(requested), "", window, guard{}), t0.Add(time.Second))
	g.Expect(meta.FindStatusCondition(other.Conditions, v1alpha1.WaitingCondition).Reason).To(Equal(v1alpha1.OutsideWindowReason))

	// Admitted, it waits no more.
	admitted := gen.Node("n1", gen.Unschedulable(), gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID), gen.Admitted("boot-0", t0, reqID))
	apply(&nm.Status, decide(nm, reqID, read(admitted), "", waiting{}, guard{}), t0.Add(time.Minute))
	g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseDraining))
	g.Expect(meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.WaitingCondition)).To(BeNil())
}

// A request raised on the node is recorded with the boot it was raised in
// (record); when the node reboots before the record's first phase is
// written (the leader killed in between, as a soak found), the request is
// no longer raised and was never journaled for the API: the boot in its
// label says the reboot answered it, where it waited as Pending for ever.
func TestARecordWhoseBootEndedBeforeItsFirstPhaseIsAnsweredByThatReboot(t *testing.T) {
	g := NewWithT(t)
	recorded := func(boot string) *v1alpha1.NodeMaintenance {
		nm := maintenanceIn(v1alpha1.NodeMaintenanceStatus{})
		nm.Spec.Source = v1alpha1.SourceHost
		nm.Labels = map[string]string{v1alpha1.BootIDLabel: boot, v1alpha1.RequestIDLabel: reqID}
		return nm
	}
	back := read(gen.Node("n1", gen.BootID("boot-1"), gen.RequestedIDs("boot-1", v1alpha1.SourceHost, t0, "other")))
	got := decide(recorded("boot-0"), reqID, back, "", waiting{}, guard{})
	g.Expect(got.phase).To(Equal(v1alpha1.PhaseSucceeded), got.message)
	g.Expect(got.bootIDBefore).To(Equal("boot-0"))
	g.Expect(got.bootIDAfter).To(Equal("boot-1"))

	// Still in its boot, not raised (the daemon has not shown it yet):
	// pending, as before.
	same := read(gen.Node("n1", gen.BootID("boot-0")))
	got = decide(recorded("boot-0"), reqID, same, "", waiting{}, guard{})
	g.Expect(got.phase).To(Equal(v1alpha1.PhasePending), got.message)

	// An API request's label means nothing of the kind: it waits for its
	// daemon to journal it.
	api := recorded("boot-0")
	api.Spec.Source = v1alpha1.SourceAPI
	got = decide(api, reqID, back, "", waiting{}, guard{})
	g.Expect(got.phase).To(Equal(v1alpha1.PhasePending), got.message)
}
