package gate_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// A pool with more nodes unavailable than its budget allows, here because
// its maxUnavailable was lowered under three nodes in flight, says so: a
// condition that names the nodes, one Warning event for the episode however
// often its status changes meanwhile, and the metrics. It admits no one
// until it is back within its budget.
func TestOverBudgetIsReported(t *testing.T) {
	g := NewWithT(t)
	createPool(t, gen.Pool("over", intstr.FromInt32(3)))
	nodes := createNodes(t, "over", "over", 4)
	addr := harness.FreeAddr(t)
	harness.StartOperatorWith(t, bed, operator.Options{MetricsAddr: addr})
	for i, n := range nodes[:3] {
		request(t, n, "o"+n, time.Now().Add(time.Duration(i)*time.Second))
	}
	// No daemon yet: the three approved nodes stay in flight.
	for _, n := range nodes[:3] {
		g.Eventually(func(g Gomega) map[string]string { return getNode(g, n).Annotations }, timeout).
			Should(HaveKeyWithValue(protocol.RebootApproved, "boot-0"))
	}
	g.Eventually(func(g Gomega) string { return harness.Scrape(g, addr) }, timeout).Should(And(
		ContainSubstring(`kmaint_pool_over_budget{pool="over"} 0`),
		ContainSubstring(`kmaint_pool_over_budget_episodes_total{pool="over"} 0`)))

	harness.PatchPool(g, bed, "over", func(p *v1alpha1.MaintenancePool) {
		one := intstr.FromInt32(1)
		p.Spec.MaxUnavailable = &one
	})
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPool(g, "over").Status.Conditions, v1alpha1.OverBudgetCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(v1alpha1.TooManyUnavailableReason))
		g.Expect(c.Message).To(ContainSubstring("3 nodes count against a maxUnavailable of 1: over-0 (rebooting), over-1 (rebooting), over-2 (rebooting)"))
	}, timeout).Should(Succeed())
	overBudgetEvents := func(g Gomega) int {
		n := 0
		for _, r := range harness.EventReasons(g, bed, "MaintenancePool", "over", "Warning") {
			if r == v1alpha1.OverBudgetCondition {
				n++
			}
		}
		return n
	}
	g.Eventually(overBudgetEvents, timeout).Should(Equal(1))
	g.Eventually(func(g Gomega) string { return harness.Scrape(g, addr) }, timeout).Should(And(
		ContainSubstring(`kmaint_pool_over_budget{pool="over"} 1`),
		ContainSubstring(`kmaint_pool_over_budget_episodes_total{pool="over"} 1`)))

	// The episode goes on while a fourth node asks and the status changes:
	// no second event, and the node is not admitted.
	request(t, nodes[3], "o3", time.Now())
	expectBlocked(g, "over", v1alpha1.BudgetExhaustedReason, "waiting: "+nodes[3])
	g.Expect(overBudgetEvents(g)).To(Equal(1))
	g.Expect(getNode(g, nodes[3]).Annotations).NotTo(HaveKey(protocol.Admitted))

	// The nodes come back: the pool is within its budget again and the
	// fourth node takes its turn.
	runDaemons(t, "over", false)
	g.Eventually(func(g Gomega) {
		for _, n := range nodes {
			expectRebootedOnce(g, n, false)
		}
		c := meta.FindStatusCondition(getPool(g, "over").Status.Conditions, v1alpha1.OverBudgetCondition)
		g.Expect(c).To(HaveField("Status", metav1.ConditionFalse))
	}, 2*timeout).Should(Succeed())
	g.Expect(overBudgetEvents(g)).To(Equal(1))
	g.Eventually(func(g Gomega) string { return harness.Scrape(g, addr) }, timeout).Should(And(
		ContainSubstring(`kmaint_pool_over_budget{pool="over"} 0`),
		ContainSubstring(`kmaint_pool_over_budget_episodes_total{pool="over"} 1`)))
}
