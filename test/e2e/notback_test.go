package e2e_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/sim"
)

// TestNodeNotBackIsReportedAndHoldsItsSlot: a node approved to reboot that
// does not come back keeps its pool's slot (it really is unavailable), so
// no other node is admitted; past the operator's bound it is reported, once:
// NodeNotBack on the node, a Warning event on the node and its pool, the
// pool's and the NodeMaintenance's Degraded condition. When the node comes
// back its reboot completes as usual, the report clears, and the next node
// gets the slot.
func TestNodeNotBackIsReportedAndHoldsItsSlot(t *testing.T) {
	harness.RequireRoot(t)
	g := NewWithT(t)
	ctx := context.Background()
	const pool, bound = "slate", 15 * time.Minute
	gone, next := pool+"-000", pool+"-001"
	// The daemon's own bound (real time) stays out of the way: the
	// operator's (fake time) is the one under test.
	c, clk, t0, _ := twoNodesOnAFakeClock(t, pool, sim.Timing{Reboot: time.Second, DaemonRebootTimeout: 10 * time.Minute},
		operator.Options{NodeReturnTimeout: bound})

	// The machine's reboot hangs: its daemon asks, and the boot goes on.
	c.Node(gone).IgnoreReboots(true)
	first := c.Node(gone).BootID()
	g.Expect(c.Node(gone).RequestReboot("kernel update")).To(Succeed())
	g.Eventually(func(g Gomega) {
		st, err := protocol.Read(getNode(g, gone))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Approved).To(Equal(first))
		g.Expect(st.Admission.ApprovedAt).To(Equal(t0), "the approval says when it was made")
		g.Expect(st.AwaitingReturn()).To(BeTrue())
	}, timeout).Should(Succeed())
	g.Expect(c.Node(next).RequestReboot("kernel update")).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(harness.MaintenancesOf(g, bed, next)).To(ConsistOf(HaveField("Status.Phase", v1alpha1.PhaseRequested)))
	}, timeout).Should(Succeed())
	expectHeld := func(g Gomega) {
		n := getNode(g, gone)
		g.Expect(n.Spec.Unschedulable).To(BeTrue())
		g.Expect(n.Annotations).To(HaveKeyWithValue(protocol.RebootApproved, first))
		g.Expect(getNode(g, next).Annotations).NotTo(HaveKey(protocol.Admitted), "no slot for the next node")
	}
	notReported := func(g Gomega) {
		expectHeld(g)
		g.Expect(getNode(g, gone).Annotations).NotTo(HaveKey(protocol.NodeNotBack))
		g.Expect(harness.EventReasons(g, bed, "Node", gone, "Warning")).NotTo(ContainElement(v1alpha1.NodeNotBackReason))
	}
	g.Consistently(notReported, 3*time.Second).Should(Succeed())

	// A second short of the bound, nothing is reported yet.
	clk.SetTime(t0.Add(bound - time.Second))
	poke(g, gone, "1")
	g.Consistently(notReported, 3*time.Second).Should(Succeed())

	// At the bound it is, and the slot stays held.
	clk.SetTime(t0.Add(bound))
	poke(g, gone, "2")
	g.Eventually(func(g Gomega) {
		expectHeld(g)
		st, err := protocol.Read(getNode(g, gone))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.NotBack).To(Equal(&protocol.NotBack{ApprovedBoot: first, ApprovedAt: t0, Since: t0.Add(bound)}))
		g.Expect(harness.EventReasons(g, bed, "Node", gone, "Warning")).To(ContainElement(v1alpha1.NodeNotBackReason))
		g.Expect(harness.EventReasons(g, bed, "MaintenancePool", pool, "Warning")).To(ContainElement(v1alpha1.NodeNotBackReason))

		p := harness.GetPool(g, bed, pool)
		g.Expect(p.Status.Degraded).To(BeEquivalentTo(1))
		g.Expect(p.Status.Unavailable).To(BeEquivalentTo(1))
		cond := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.DegradedCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(cond.Reason).To(Equal(v1alpha1.NodeNotBackReason))
		g.Expect(cond.Message).To(ContainSubstring(gone + ": not back"))

		nms := harness.MaintenancesOf(g, bed, gone)
		g.Expect(nms).To(HaveLen(1))
		g.Expect(nms[0].Status.Phase.Done()).To(BeFalse(), "it may still come back")
		d := meta.FindStatusCondition(nms[0].Status.Conditions, v1alpha1.DegradedCondition)
		g.Expect(d).NotTo(BeNil())
		g.Expect(d.Reason).To(Equal(v1alpha1.NodeNotBackReason))
	}, timeout).Should(Succeed())
	// Reported once, however often the gate looks again.
	clk.SetTime(t0.Add(2 * bound))
	poke(g, gone, "3")
	g.Consistently(func(g Gomega) {
		expectHeld(g)
		st, err := protocol.Read(getNode(g, gone))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.NotBack.Since).To(Equal(t0.Add(bound)), "the report is not made again")
		reasons := harness.EventReasons(g, bed, "Node", gone, "Warning")
		g.Expect(countOf(reasons, v1alpha1.NodeNotBackReason)).To(Equal(1))
	}, 3*time.Second).Should(Succeed())
	g.Expect(c.Node(gone).Reboots()).To(BeZero())
	g.Expect(c.Node(next).Reboots()).To(BeZero())

	// The machine comes back (a person power-cycles it): the reboot
	// completes, the report clears, and the next node gets the slot.
	c.Node(gone).IgnoreReboots(false)
	g.Expect(c.Node(gone).ForceReboot(ctx)).To(Succeed())
	g.Eventually(func(g Gomega) {
		harness.ExpectSettled(g, bed, gone, false)
		g.Expect(getNode(g, gone).Annotations).NotTo(HaveKey(protocol.NodeNotBack))
		g.Expect(harness.MaintenancesOf(g, bed, gone)).To(ConsistOf(And(
			HaveField("Status.Phase", v1alpha1.PhaseSucceeded),
			WithTransform(degradedCondition, BeNil()))))
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		harness.ExpectSettled(g, bed, next, false)
		p := harness.GetPool(g, bed, pool)
		g.Expect(p.Status.Degraded).To(BeZero())
		g.Expect(meta.IsStatusConditionFalse(p.Status.Conditions, v1alpha1.DegradedCondition)).To(BeTrue(), "the report cleared")
	}, timeout).Should(Succeed())
	g.Expect(c.Node(next).Reboots()).To(Equal(1))
}

func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}
