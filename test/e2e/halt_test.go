package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/promtest"
	"github.com/kmaint/kmaint/test/sim"
)

// TestRolloutHaltsAtTheFirstUnhealthyNode is the guarded rollout: a
// desiredConfig rollout over five nodes, one at a time, each keeping its
// slot for a settle time while a health check on the real Prometheus
// watches it. The third node comes back unhealthy: the pool halts after
// it (condition, events, metrics, its NodeMaintenance says which check
// and what value), and no fourth node is admitted. Its series recovering
// does not resume a pool that resumes Manual; the annotation a person
// (or `kubectl kmaint resume`) writes does, and the rollout completes with
// one reboot per node.
func TestRolloutHaltsAtTheFirstUnhealthyNode(t *testing.T) {
	promtest.Binary(t) // skip (or fail on CI) without Prometheus
	logStateOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	const pool, check, config = "guarded", "node-healthy", "os-2.0"
	const nodes = 5
	interval := v1alpha1.MinHealthCheckInterval
	c, err := sim.Start(ctx, bed, sim.Config{
		Pools:   []sim.PoolSpec{sim.PoolSpec{Name: pool, Nodes: nodes, MaxUnavailable: intstr.FromInt32(1)}.Guarded(check, 3*time.Second)},
		Journal: sim.Memory,
		Timing:  sim.Timing{Reboot: time.Second, DaemonRebootTimeout: 5 * time.Second},
		Metrics: &sim.MetricsConfig{Interval: time.Second},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(c.Stop)
	harness.WatchBudget(t, bed, pool).FailAbove(1)
	g.Expect(c.SetUnhealthyOnReboot(3)).To(Succeed())
	g.Expect(c.StartOperator()).To(Succeed())
	name := func(i int) string { return fmt.Sprintf("%s-%03d", pool, i) }
	reboots := func() int {
		n := 0
		for i := range nodes {
			n += c.Node(name(i)).Reboots()
		}
		return n
	}

	harness.PatchPool(g, bed, pool, func(p *v1alpha1.MaintenancePool) { p.Spec.DesiredConfig = config })

	// The first node back settles: its stage and its request say so.
	g.Eventually(func(g Gomega) {
		found := false
		for i := range nodes {
			st, _ := protocol.Read(getNode(g, name(i)))
			if st.Settle == nil {
				continue
			}
			g.Expect(st.Position(false).Stage).To(Equal(v1alpha1.PhaseSettling))
			nms := harness.MaintenancesOf(g, bed, name(i))
			g.Expect(nms).To(HaveLen(1))
			g.Expect(nms[0].Status.Phase).To(Equal(v1alpha1.PhaseSettling), "request of settling node %s", name(i))
			g.Expect(nms[0].Status.PhaseTimes.Settling).NotTo(BeNil())
			found = true
		}
		g.Expect(found).To(BeTrue(), "a node settling")
	}, timeout, 100*time.Millisecond).Should(Succeed())

	// The third node back is unhealthy, and the pool halts after it.
	var bad string
	g.Eventually(func() []string { return c.Unhealthy() }, 3*timeout).Should(HaveLen(1))
	bad = c.Unhealthy()[0]
	t.Logf("unhealthy node: %s", bad)
	g.Eventually(func(g Gomega) {
		p := harness.GetPool(g, bed, pool)
		h := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.HaltedCondition)
		g.Expect(h).NotTo(BeNil())
		g.Expect(h.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(h.Reason).To(Equal(v1alpha1.HealthCheckFailedReason))
		g.Expect(h.Message).To(And(ContainSubstring(bad), ContainSubstring(check)))
		g.Expect(p.Status.Halt).NotTo(BeNil())
		g.Expect(p.Status.Halt.Nodes).To(ConsistOf(And(HaveField("Node", bad), HaveField("Check", check), HaveField("Value", "1"))))
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(harness.EventReasons(g, bed, "MaintenancePool", pool, "Warning")).To(
			ContainElements(v1alpha1.HealthCheckFailedReason, v1alpha1.PoolHaltedReason))
		g.Expect(harness.EventReasons(g, bed, "Node", bad, "Warning")).To(ContainElement(v1alpha1.HealthCheckFailedReason))
	}, timeout).Should(Succeed())
	addr := c.KmaintMetricsAddr()
	g.Eventually(func(g Gomega) string { return harness.Scrape(g, addr) }, timeout).Should(And(
		ContainSubstring(`kmaint_pool_halted{pool="`+pool+`"} 1`),
		ContainSubstring(`kmaint_pool_settling_nodes{pool="`+pool+`"} 1`),
		ContainSubstring(`kmaint_health_check_failures_total{check="`+check+`",pool="`+pool+`"} 1`),
	))
	g.Eventually(func(g Gomega) {
		nms := harness.MaintenancesOf(g, bed, bad)
		g.Expect(nms).To(HaveLen(1))
		g.Expect(nms[0].Status.Phase).To(Equal(v1alpha1.PhaseSettling))
		hc := meta.FindStatusCondition(nms[0].Status.Conditions, v1alpha1.HealthyCondition)
		g.Expect(hc).NotTo(BeNil())
		g.Expect(hc.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(hc.Reason).To(Equal(v1alpha1.HealthCheckFailedReason))
		g.Expect(hc.Message).To(And(ContainSubstring(check), ContainSubstring("returned 1")))
	}, timeout).Should(Succeed())

	// No fourth node is admitted, over a few rounds of the checks.
	noFourth := func(g Gomega) {
		g.Expect(reboots()).To(Equal(3))
		for i := range nodes {
			st, _ := protocol.Read(getNode(g, name(i)))
			g.Expect(st.Admission).To(BeNil(), "%s admitted while the pool is halted", name(i))
		}
		g.Expect(meta.IsStatusConditionTrue(harness.GetPool(g, bed, pool).Status.Conditions, v1alpha1.HaltedCondition)).To(BeTrue())
	}
	g.Consistently(noFourth, 3*interval, 500*time.Millisecond).Should(Succeed())

	// The series recovers: a pool that resumes Manual stays halted.
	g.Expect(c.SetHealthy(bad)).To(Succeed())
	g.Consistently(noFourth, 2*interval, 500*time.Millisecond).Should(Succeed())

	// A person resumes it, as `kubectl kmaint resume` does: the time of the
	// latest failure in status.halt.
	p := harness.GetPool(g, bed, pool)
	latest := p.Status.Halt.Nodes[len(p.Status.Halt.Nodes)-1].Time
	harness.PatchPool(g, bed, pool, func(p *v1alpha1.MaintenancePool) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[v1alpha1.ResumeHaltAnnotation] = latest.UTC().Format(time.RFC3339)
	})

	// The rollout completes: every node runs the config, rebooted once.
	g.Eventually(func(g Gomega) {
		for i := range nodes {
			n := getNode(g, name(i))
			g.Expect(n.Annotations).To(HaveKeyWithValue(protocol.CurrentConfig, config), name(i))
			g.Expect(n.Annotations).NotTo(HaveKey(protocol.Settling), name(i))
		}
		p := harness.GetPool(g, bed, pool)
		g.Expect(meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.HaltedCondition)).To(BeFalse())
		g.Expect(p.Status.Halt).To(BeNil())
	}, 3*timeout).Should(Succeed())
	for i := range nodes {
		g.Expect(c.Node(name(i)).Reboots()).To(Equal(1), "reboots of %s", name(i))
		nms := harness.MaintenancesOf(g, bed, name(i))
		g.Expect(nms).To(HaveLen(1))
		g.Eventually(func(g Gomega) v1alpha1.Phase {
			return harness.MaintenancesOf(g, bed, name(i))[0].Status.Phase
		}, timeout).Should(Equal(v1alpha1.PhaseSucceeded), name(i))
	}
	hc := meta.FindStatusCondition(harness.MaintenancesOf(g, bed, bad)[0].Status.Conditions, v1alpha1.HealthyCondition)
	g.Expect(hc).NotTo(BeNil())
	g.Expect(hc.Reason).To(Equal(v1alpha1.HealthCheckResumedReason), "the resumed node's request says it was resumed, not healthy")
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "MaintenancePool", pool, "Normal") }, timeout).Should(ContainElement(v1alpha1.HealthCheckResumedReason))
}
