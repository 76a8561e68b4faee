package maintenance

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

func TestDecideGuarded(t *testing.T) {
	until := t0.Add(time.Minute)
	settle := func(failure *protocol.HealthCheckFailure) gen.NodeOption {
		return gen.Annotations(protocol.Settling, protocol.Encode(protocol.Settle{
			BootID: "boot-1", RebootedBoot: "boot-0", Requests: []string{reqID}, Pool: "p", Since: t0, Until: until, Failure: failure}))
	}
	failure := &protocol.HealthCheckFailure{Check: "up", Value: "1", Series: `{node="n1"}`, Time: t0.Add(10 * time.Second)}
	rebooting := raisedIn(v1alpha1.PhaseRebooting, "boot-0")
	withHealthy := func(s v1alpha1.NodeMaintenanceStatus, status metav1.ConditionStatus, reason string) v1alpha1.NodeMaintenanceStatus {
		s.Conditions = []metav1.Condition{{Type: v1alpha1.HealthyCondition, Status: status, Reason: reason, Message: "m"}}
		return s
	}
	backApproved := gen.Node("n1", gen.BootID("boot-1"), gen.Admitted("boot-0", t0, reqID), gen.Approved("boot-0"))
	cases := map[string]struct {
		status v1alpha1.NodeMaintenanceStatus
		node   gen.NodeOption
		guard  guard

		wantPhase   v1alpha1.Phase
		wantMessage string
		// wantHealthy is the Healthy condition's status and reason; empty
		// when none is set.
		wantHealthy metav1.ConditionStatus
		wantReason  string
	}{
		"unguarded pool: back and Ready succeeds at once, as before": {
			status: rebooting, wantPhase: v1alpha1.PhaseSucceeded,
		},
		"guarded pool: back, but the gate has not completed it: still Rebooting": {
			status: rebooting, guard: guard{guarded: true}, wantPhase: v1alpha1.PhaseRebooting, wantMessage: "waiting for its pool to complete the reboot",
		},
		"settling without checks: no Healthy condition": {
			status: rebooting, guard: guard{guarded: true}, node: settle(nil),
			wantPhase: v1alpha1.PhaseSettling, wantMessage: "settles until " + until.Format(time.RFC3339),
		},
		"settling with checks: Healthy Unknown": {
			status: rebooting, guard: guard{guarded: true, checks: true}, node: settle(nil),
			wantPhase: v1alpha1.PhaseSettling, wantHealthy: metav1.ConditionUnknown, wantReason: v1alpha1.HealthCheckingReason,
		},
		"failed: Healthy False names the check and the value": {
			status: rebooting, guard: guard{guarded: true, checks: true}, node: settle(failure),
			wantPhase: v1alpha1.PhaseSettling, wantMessage: `health check "up" returned 1`,
			wantHealthy: metav1.ConditionFalse, wantReason: v1alpha1.HealthCheckFailedReason,
		},
		"settled after a failure (resumed): Succeeded, Healthy stays False": {
			status: withHealthy(raisedIn(v1alpha1.PhaseSettling, "boot-0"), metav1.ConditionFalse, v1alpha1.HealthCheckFailedReason),
			guard:  guard{guarded: true, checks: true},
			node:   gen.Annotations(), wantPhase: v1alpha1.PhaseSucceeded,
			wantHealthy: metav1.ConditionFalse, wantReason: v1alpha1.HealthCheckResumedReason,
		},
		"settled after checking: Succeeded, Healthy True": {
			status: withHealthy(raisedIn(v1alpha1.PhaseSettling, "boot-0"), metav1.ConditionUnknown, v1alpha1.HealthCheckingReason),
			guard:  guard{guarded: true, checks: true},
			node:   gen.Annotations(), wantPhase: v1alpha1.PhaseSucceeded,
			wantHealthy: metav1.ConditionTrue, wantReason: v1alpha1.HealthCheckPassedReason,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			node := backApproved
			if tc.node != nil {
				// Aftercare completed the reboot: no approval, maybe a record.
				node = gen.Node("n1", gen.BootID("boot-1"), tc.node)
			}
			got := decide(maintenanceIn(tc.status), reqID, read(node), "", waiting{}, tc.guard)
			g.Expect(got.phase).To(Equal(tc.wantPhase), "phase (message %q)", got.message)
			g.Expect(got.message).To(ContainSubstring(tc.wantMessage))
			g.Expect(got.health.status).To(Equal(tc.wantHealthy))
			g.Expect(got.health.reason).To(Equal(tc.wantReason))
		})
	}
}
