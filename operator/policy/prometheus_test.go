package policy_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/harness"
)

// A node over the threshold for less than `for` gets nothing; one that
// stays over it gets exactly one request; one that dips restarts its clock.
func TestThresholdHeldForRaisesOneRequestPerNode(t *testing.T) {
	g := NewWithT(t)
	m := startMetrics(t)
	nodes := harness.CreateNodes(t, bed, "held", "held", 3)
	for _, n := range nodes {
		m.set(t, "held", n, 0.5)
	}
	startOperator(t, m.prom.URL(), nil)
	const forDur = 6 * time.Second
	harness.CreateTemporary(t, bed, newPolicy("held", "held", promTrigger(query("held"), "0.9", forDur)))
	g.Eventually(func(g Gomega) {
		g.Expect(condition(g, "held", v1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}, timeout).Should(Succeed())

	// held-0 crosses, and falls back before `for` is up.
	m.set(t, "held", nodes[0], 0.95)
	var firstSince metav1.Time
	g.Eventually(func(g Gomega) {
		c := candidate(harness.GetPolicy(g, bed, "held"), nodes[0])
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.State).To(Equal(v1alpha1.CandidatePending))
		g.Expect(c.Value).To(Equal("0.95"))
		firstSince = c.Since
	}, timeout).Should(Succeed())
	m.set(t, "held", nodes[0], 0.7)
	g.Eventually(func(g Gomega) {
		g.Expect(candidate(harness.GetPolicy(g, bed, "held"), nodes[0])).To(BeNil())
	}, timeout).Should(Succeed())

	// It crosses again: a new pending clock, not the old one.
	m.set(t, "held", nodes[0], 0.96)
	g.Eventually(func(g Gomega) {
		c := candidate(harness.GetPolicy(g, bed, "held"), nodes[0])
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Since.After(firstSince.Time)).To(BeTrue(), "the pending clock restarted")
	}, timeout).Should(Succeed())
	m.set(t, "held", nodes[0], 0.5)

	// held-1 crosses and stays.
	m.set(t, "held", nodes[1], 0.93)
	g.Eventually(func(g Gomega) {
		g.Expect(harness.PolicyMaintenances(g, bed, "held")).To(HaveKey(nodes[1]))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		reqs := harness.PolicyMaintenances(g, bed, "held")
		g.Expect(reqs).To(HaveLen(1), "only the node that held the threshold for %s", forDur)
		g.Expect(reqs[nodes[1]]).To(HaveLen(1), "exactly one request while it stays over the threshold")
	}, 2*forDur, 500*time.Millisecond).Should(Succeed())

	nm := harness.PolicyMaintenances(g, bed, "held")[nodes[1]][0]
	g.Expect(nm.Spec.Source).To(Equal(v1alpha1.SourceMetric))
	g.Expect(nm.Spec.Reason).To(Equal("policy held: 0.93 > 0.9 for 6s"))
	g.Expect(nm.Annotations).To(HaveKeyWithValue(v1alpha1.ValueAnnotation, "0.93"))
	p := harness.GetPolicy(g, bed, "held")
	g.Expect(p.Status.RequestsRaised).To(BeEquivalentTo(1))
	g.Expect(p.Status.LastEvaluationTime).NotTo(BeNil())
	g.Expect(p.Status.LastEvaluationDuration).NotTo(BeNil())
	g.Expect(candidate(p, nodes[1]).State).To(Equal(v1alpha1.CandidateRequested))
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "RebootPolicy", "held", "") }, timeout).Should(ContainElement("RequestRaised"))
}

// When most of the fleet qualifies at once, the cap holds and says so.
func TestCapHoldsAndIsReported(t *testing.T) {
	g := NewWithT(t)
	m := startMetrics(t)
	nodes := harness.CreateNodes(t, bed, "cap", "cap", 5)
	for _, n := range nodes {
		m.set(t, "cap", n, 0.99)
	}
	startOperator(t, m.prom.URL(), nil)
	p := newPolicy("cap", "cap", promTrigger(query("cap"), "0.9", 0))
	p.Spec.MaxConcurrentRequests = &intstr.IntOrString{Type: intstr.String, StrVal: "40%"}
	harness.CreateTemporary(t, bed, p)

	g.Eventually(func(g Gomega) {
		g.Expect(harness.PolicyMaintenances(g, bed, "cap")).To(HaveLen(2))
		c := condition(g, "cap", v1alpha1.CapReachedCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Message).To(ContainSubstring("3 more nodes qualify than the cap of 2"))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(harness.PolicyMaintenances(g, bed, "cap")).To(HaveLen(2))
	}, 4*time.Second, 500*time.Millisecond).Should(Succeed())
	over := 0
	for _, c := range harness.GetPolicy(g, bed, "cap").Status.Candidates {
		if c.State == v1alpha1.CandidateOverCap {
			over++
		}
	}
	g.Expect(over).To(Equal(3))
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "RebootPolicy", "cap", "") }, timeout).Should(ContainElement("CapReached"))
}

// A dry run lists the nodes it would reboot and raises nothing.
func TestDryRunRaisesNothing(t *testing.T) {
	g := NewWithT(t)
	m := startMetrics(t)
	nodes := harness.CreateNodes(t, bed, "dry", "dry", 2)
	m.set(t, "dry", nodes[0], 0.99)
	m.set(t, "dry", nodes[1], 0.1)
	startOperator(t, m.prom.URL(), nil)
	p := newPolicy("dry", "dry", promTrigger(query("dry"), "0.9", 0))
	p.Spec.DryRun = true
	harness.CreateTemporary(t, bed, p)
	g.Eventually(func(g Gomega) {
		g.Expect(harness.GetPolicy(g, bed, "dry").Status.WouldRequest).To(Equal([]string{nodes[0]}))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(harness.PolicyMaintenances(g, bed, "dry")).To(BeEmpty())
	}, 3*time.Second, 500*time.Millisecond).Should(Succeed())
	g.Expect(candidate(harness.GetPolicy(g, bed, "dry"), nodes[0]).State).To(Equal(v1alpha1.CandidateWouldRequest))
}

// Prometheus down: nothing is raised, and the policy says why; once it is
// back, the policy works again.
func TestPrometheusDownRaisesNothing(t *testing.T) {
	g := NewWithT(t)
	m := startMetrics(t)
	nodes := harness.CreateNodes(t, bed, "down", "down", 2)
	for _, n := range nodes {
		m.set(t, "down", n, 0.99)
	}
	m.prom.Stop()
	startOperator(t, m.prom.URL(), nil)
	harness.CreateTemporary(t, bed, newPolicy("down", "down", promTrigger(query("down"), "0.9", 0)))
	g.Eventually(func(g Gomega) {
		c := condition(g, "down", v1alpha1.PrometheusUnreachableCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Message).To(ContainSubstring("connection refused"))
		g.Expect(condition(g, "down", v1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionFalse))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(harness.PolicyMaintenances(g, bed, "down")).To(BeEmpty())
	}, 3*time.Second, 500*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "RebootPolicy", "down", "") }, timeout).Should(ContainElement("PrometheusUnreachable"))

	m.prom.Restart()
	g.Eventually(func(g Gomega) {
		g.Expect(condition(g, "down", v1alpha1.PrometheusUnreachableCondition).Status).To(Equal(metav1.ConditionFalse))
		g.Expect(harness.PolicyMaintenances(g, bed, "down")).To(HaveLen(1), "the default cap is 1")
	}, timeout).Should(Succeed())
}

// No Prometheus configured at all is the same: said, and nothing raised.
func TestNoPrometheusConfigured(t *testing.T) {
	g := NewWithT(t)
	harness.CreateNodes(t, bed, "noprom", "noprom", 1)
	startOperator(t, "", nil)
	harness.CreateTemporary(t, bed, newPolicy("noprom", "noprom", promTrigger("up", "0", 0)))
	g.Eventually(func(g Gomega) {
		g.Expect(condition(g, "noprom", v1alpha1.PrometheusUnreachableCondition).Message).To(ContainSubstring("--prometheus-url"))
	}, timeout).Should(Succeed())
	g.Expect(harness.PolicyMaintenances(g, bed, "noprom")).To(BeEmpty())
}

// A broken query is reported with the parser's message; a series that
// names no node is reported too, and neither reboots anything.
func TestBadQueryAndUnmatchedSeriesAreReported(t *testing.T) {
	g := NewWithT(t)
	m := startMetrics(t)
	nodes := harness.CreateNodes(t, bed, "badq", "badq", 1)
	m.set(t, "badq", nodes[0], 0.99)
	m.set(t, "badq", "not-a-node", 0.99)
	m.exp.Set("kmaint_test_unlabelled", map[string]string{"test": "badq"}, 1)
	startOperator(t, m.prom.URL(), nil)

	harness.CreateTemporary(t, bed, newPolicy("badq", "badq", promTrigger("sum(kmaint_test_value", "0.9", 0)))
	g.Eventually(func(g Gomega) {
		c := condition(g, "badq", v1alpha1.QueryFailingCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Message).To(ContainSubstring("parse error"))
		g.Expect(condition(g, "badq", v1alpha1.PrometheusUnreachableCondition).Status).To(Equal(metav1.ConditionFalse))
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "RebootPolicy", "badq", "") }, timeout).Should(ContainElement("QueryFailing"))
	g.Expect(harness.PolicyMaintenances(g, bed, "badq")).To(BeEmpty())

	harness.CreateTemporary(t, bed, newPolicy("unmatched", "badq", promTrigger(query("badq")+` or kmaint_test_unlabelled{test="badq"}`, "0.9", time.Hour)))
	g.Eventually(func(g Gomega) {
		c := condition(g, "unmatched", v1alpha1.UnmatchedSeriesCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Message).To(ContainSubstring(`2 series name no known node by label "node"`))
		g.Expect(c.Message).To(ContainSubstring(`not-a-node`))
		g.Expect(candidate(harness.GetPolicy(g, bed, "unmatched"), nodes[0])).NotTo(BeNil(), "the good series still counts")
	}, timeout).Should(Succeed())
}

// A node rebooted recently, for whatever reason, waits out the cooldown;
// after the policy's own reboot, the policy shows the value before and
// after.
func TestCooldownAndOutcome(t *testing.T) {
	g := NewWithT(t)
	m := startMetrics(t)
	nodes := harness.CreateNodes(t, bed, "cool", "cool", 1)
	node := nodes[0]
	m.set(t, "cool", node, 0.97)
	startOperator(t, m.prom.URL(), nil)
	harness.RunDaemons(t, bed, "cool", true)
	stop := harness.RaiseMaintenances(t, bed, node)
	defer stop()

	p := newPolicy("cool", "cool", promTrigger(query("cool"), "0.9", 0))
	p.Spec.Cooldown = &metav1.Duration{Duration: time.Hour}
	harness.CreateTemporary(t, bed, p)

	// The policy's request goes through the gate and the node reboots.
	g.Eventually(func(g Gomega) {
		reqs := harness.PolicyMaintenances(g, bed, "cool")[node]
		g.Expect(reqs).To(HaveLen(1))
		g.Expect(reqs[0].Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
	}, timeout).Should(Succeed())
	// Still over the threshold, but inside the cooldown: no second request.
	g.Eventually(func(g Gomega) {
		c := candidate(harness.GetPolicy(g, bed, "cool"), node)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.State).To(Equal(v1alpha1.CandidateCooldown))
		g.Expect(c.Until.Time).To(BeTemporally("~", time.Now().Add(time.Hour), time.Minute))
	}, timeout).Should(Succeed())
	m.set(t, "cool", node, 0.42)
	g.Eventually(func(g Gomega) {
		out := harness.GetPolicy(g, bed, "cool").Status.Outcomes
		g.Expect(out).To(HaveLen(1))
		g.Expect(out[0].Node).To(Equal(node))
		g.Expect(out[0].ValueBefore).To(Equal("0.97"))
		g.Expect(out[0].ValueAfter).To(Equal("0.42"))
	}, timeout).Should(Succeed())
	g.Expect(harness.PolicyMaintenances(g, bed, "cool")[node]).To(HaveLen(1))
}

// A suspended policy evaluates nothing.
func TestSuspendedPolicyRaisesNothing(t *testing.T) {
	g := NewWithT(t)
	m := startMetrics(t)
	nodes := harness.CreateNodes(t, bed, "susp", "susp", 1)
	m.set(t, "susp", nodes[0], 0.99)
	startOperator(t, m.prom.URL(), nil)
	p := newPolicy("susp", "susp", promTrigger(query("susp"), "0.9", 0))
	p.Spec.Suspend = true
	harness.CreateTemporary(t, bed, p)
	g.Eventually(func(g Gomega) {
		g.Expect(condition(g, "susp", v1alpha1.ReadyCondition).Reason).To(Equal("Suspended"))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(harness.PolicyMaintenances(g, bed, "susp")).To(BeEmpty())
	}, 3*time.Second, 500*time.Millisecond).Should(Succeed())

	// Resumed, it raises.
	p = harness.GetPolicy(g, bed, "susp")
	p.Spec.Suspend = false
	g.Expect(bed.Client.Update(context.Background(), p)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(harness.PolicyMaintenances(g, bed, "susp")).To(HaveLen(1))
	}, timeout).Should(Succeed())
}
