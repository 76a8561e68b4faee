package gate_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

func rebootPolicy(name string, windows ...v1alpha1.MaintenanceWindow) *v1alpha1.RebootPolicy {
	return &v1alpha1.RebootPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.RebootPolicySpec{
			Schedule: &v1alpha1.ScheduleTrigger{Cron: "0 3 1 * *"},
			Windows:  windows,
			Suspend:  true,
		},
	}
}

// policyRequest creates a NodeMaintenance raised by the policy and raises it
// on the node, as the node's daemon would.
func policyRequest(t *testing.T, name, node, policy string) {
	t.Helper()
	ctx := context.Background()
	nm := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: node, Reason: "monthly", Source: v1alpha1.SourceSchedule, Policy: policy},
	}
	if err := bed.Client.Create(ctx, nm); err != nil {
		t.Fatal(err)
	}
	if err := gen.Request(ctx, bed.Client, node, string(nm.UID), v1alpha1.SourceSchedule, time.Now()); err != nil {
		t.Fatal(err)
	}
}

func TestPolicyWindowHoldsItsRequestsOnly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// 02:00 UTC; the policy's window opens at 05:00, the pool has none.
	clk := clocktesting.NewFakePassiveClock(time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC))
	at5 := v1alpha1.MaintenanceWindow{Schedule: "0 5 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "UTC"}
	g.Expect(bed.Client.Create(ctx, rebootPolicy("pw-nightly", at5))).To(Succeed())
	broken := at5
	broken.TimeZone = "Mars/Olympus"
	g.Expect(bed.Client.Create(ctx, rebootPolicy("pw-broken", broken))).To(Succeed())
	createPool(t, gen.Pool("pw", intstr.FromInt32(3)))
	nodes := createNodes(t, "pw", "pw", 3)
	daemons := runDaemons(t, "pw", false)
	startGate(t, gateOptions{clock: clk})

	policyRequest(t, "pw-nightly-0", nodes[0], "pw-nightly")
	policyRequest(t, "pw-broken-2", nodes[2], "pw-broken")
	request(t, nodes[1], "pw-host", time.Now())

	// The host request goes; the policies' requests wait.
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[1], false) }, timeout).Should(Succeed())
	expectBlocked(g, "pw", "OutsideWindow", "until 2025-03-01T05:00:00Z", "2 nodes waiting", "pw-broken", "Mars/Olympus")
	g.Eventually(func(g Gomega) {
		nm := getMaintenance(g, "pw-nightly-0")
		g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseRequested))
		c := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.WaitingCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(v1alpha1.OutsideWindowReason))
		g.Expect(c.Message).To(ContainSubstring("RebootPolicy pw-nightly"))
		g.Expect(nm.Status.Message).To(ContainSubstring("the next opens at 2025-03-01T05:00:00Z"))

		nm = getMaintenance(g, "pw-broken-2")
		c = meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.WaitingCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(v1alpha1.InvalidWindowReason))
		g.Expect(c.Message).To(ContainSubstring("Mars/Olympus"))
	}, timeout).Should(Succeed())
	for _, n := range []string{nodes[0], nodes[2]} {
		g.Expect(getNode(g, n).Annotations).NotTo(HaveKey(protocol.Admitted))
		g.Expect(daemons.Count(n)).To(Equal(0))
	}

	// The policy's window moves to now: the gate, watching policies, admits
	// its request at once.
	p := harness.GetPolicy(g, bed, "pw-nightly")
	base := p.DeepCopy()
	p.Spec.Windows[0].Schedule = "0 2 * * *"
	g.Expect(bed.Client.Patch(ctx, p, client.MergeFrom(base))).To(Succeed())
	g.Eventually(func(g Gomega) {
		expectRebootedOnce(g, nodes[0], false)
		nm := getMaintenance(g, "pw-nightly-0")
		g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		g.Expect(meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.WaitingCondition)).To(BeNil())
	}, timeout).Should(Succeed())
	g.Expect(daemons.Count(nodes[2])).To(Equal(0), "an unreadable policy window admits nothing")
	expectBlocked(g, "pw", "OutsideWindow", "1 nodes waiting", "pw-broken")
	c := meta.FindStatusCondition(getPool(g, "pw").Status.Conditions, v1alpha1.BlockedCondition)
	g.Expect(c.Message).NotTo(ContainSubstring("open until"), "no opening of an unreadable window is known")
}
