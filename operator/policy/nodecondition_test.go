package policy_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/testbed"
)

const kernelDeadlock = "KernelDeadlock"

func conditionTrigger(typ string, forDur time.Duration) func(*v1alpha1.RebootPolicySpec) {
	return func(s *v1alpha1.RebootPolicySpec) {
		s.NodeCondition = &v1alpha1.NodeConditionTrigger{Type: typ, For: &metav1.Duration{Duration: forDur}}
	}
}

// setCondition has the node's condition of typ take status, with the
// transition time a writer would give it (now when the status changes),
// or the given one.
func setCondition(g Gomega, node, typ string, status corev1.ConditionStatus, transition ...time.Time) {
	c := corev1.NodeCondition{Type: corev1.NodeConditionType(typ), Status: status, Reason: "Test", Message: "set by the test"}
	if len(transition) > 0 {
		c.LastTransitionTime = metav1.NewTime(transition[0])
	}
	g.Expect(gen.SetCondition(context.Background(), bed.Client, node, c)).To(Succeed())
}

// unreachablePrometheus is the address of a Prometheus that is not there:
// a node condition trigger must not care.
func unreachablePrometheus(t *testing.T) string { return "http://" + harness.FreeAddr(t) }

// A condition held for `for` raises one request; the hold is timed from
// when the operator saw the condition, whatever its lastTransitionTime
// says; a condition that flaps while its request is open raises nothing
// more; Prometheus being down changes nothing.
func TestNodeConditionHeldForRaisesOneRequest(t *testing.T) {
	g := NewWithT(t)
	nodes := harness.CreateNodes(t, bed, "kd", "kd", 2)
	clk := clocktesting.NewFakeClock(time.Now())
	startOperator(t, unreachablePrometheus(t), clk)
	const forDur = 5 * time.Minute
	p := newPolicy("kd", "kd", conditionTrigger(kernelDeadlock, forDur))
	p.Spec.MaxConcurrentRequests = &intstr.IntOrString{Type: intstr.String, StrVal: "100%"}
	harness.CreateTemporary(t, bed, p)
	g.Eventually(func(g Gomega) {
		c := condition(g, "kd", v1alpha1.ReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.ObservedGeneration).To(Equal(harness.GetPolicy(g, bed, "kd").Generation))
	}, timeout).Should(Succeed())

	// kd-0's writer says the condition has been true for a day: the
	// operator sees it now, and holds it for `for` from now. kd-1's is
	// false.
	seen := clk.Now()
	setCondition(g, nodes[0], kernelDeadlock, corev1.ConditionTrue, seen.Add(-24*time.Hour))
	setCondition(g, nodes[1], kernelDeadlock, corev1.ConditionFalse)
	g.Eventually(func(g Gomega) {
		pol := harness.GetPolicy(g, bed, "kd")
		c := candidate(pol, nodes[0])
		g.Expect(c).NotTo(BeNil(), "the node's change woke the policy")
		g.Expect(c.State).To(Equal(v1alpha1.CandidatePending))
		g.Expect(c.Since.Time).To(BeTemporally("~", seen, time.Second), "since the operator saw it, not the backdated transition")
		g.Expect(c.Until.Time).To(BeTemporally("~", seen.Add(forDur), time.Second))
		g.Expect(candidate(pol, nodes[1])).To(BeNil())
	}, timeout).Should(Succeed())

	clk.Step(forDur - time.Minute)
	poke(g, "kd")
	g.Consistently(func(g Gomega) {
		g.Expect(harness.PolicyMaintenances(g, bed, "kd")).To(BeEmpty(), "inside `for`")
	}, 2*time.Second, 250*time.Millisecond).Should(Succeed())

	clk.Step(time.Minute + time.Second)
	poke(g, "kd")
	g.Eventually(func(g Gomega) {
		reqs := harness.PolicyMaintenances(g, bed, "kd")
		g.Expect(reqs).To(HaveLen(1))
		g.Expect(reqs[nodes[0]]).To(HaveLen(1))
		nm := reqs[nodes[0]][0]
		g.Expect(nm.Spec.Source).To(Equal(v1alpha1.SourceCondition))
		g.Expect(nm.Spec.Policy).To(Equal("kd"))
		g.Expect(nm.Spec.Reason).To(HavePrefix("policy kd: node condition KernelDeadlock is True, seen since "))
		g.Expect(nm.Spec.Reason).To(HaveSuffix(", for 5m"))
		g.Expect(nm.Annotations).NotTo(HaveKey(v1alpha1.ValueAnnotation))
		g.Expect(candidate(harness.GetPolicy(g, bed, "kd"), nodes[0]).State).To(Equal(v1alpha1.CandidateRequested))
	}, timeout).Should(Succeed())

	// The condition flaps while the request waits (no daemon raises it
	// here): nothing more is raised, however long it then holds.
	for _, s := range []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown, corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionTrue} {
		setCondition(g, nodes[0], kernelDeadlock, s)
		clk.Step(time.Minute)
	}
	clk.Step(2 * forDur)
	poke(g, "kd")
	g.Eventually(func(g Gomega) {
		c := candidate(harness.GetPolicy(g, bed, "kd"), nodes[0])
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.State).To(Equal(v1alpha1.CandidateRequested))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		reqs := harness.PolicyMaintenances(g, bed, "kd")
		g.Expect(reqs).To(HaveLen(1))
		g.Expect(reqs[nodes[0]]).To(HaveLen(1), "one request, however often the condition flapped")
	}, 3*time.Second, 250*time.Millisecond).Should(Succeed())
	pol := harness.GetPolicy(g, bed, "kd")
	g.Expect(meta.FindStatusCondition(pol.Status.Conditions, v1alpha1.PrometheusUnreachableCondition)).To(BeNil(), "a node condition policy asks nothing of Prometheus")
	g.Expect(meta.IsStatusConditionTrue(pol.Status.Conditions, v1alpha1.ReadyCondition)).To(BeTrue())
	g.Expect(harness.GetPolicy(g, bed, "kd").Status.RequestsRaised).To(BeEquivalentTo(1))
}

// A condition that clears before `for` is up starts from nothing when it
// comes back; so does one whose transition time says it changed between
// two looks of the operator's.
func TestNodeConditionClearedBeforeForStartsAgain(t *testing.T) {
	g := NewWithT(t)
	nodes := harness.CreateNodes(t, bed, "kdreset", "kdreset", 1)
	node := nodes[0]
	clk := clocktesting.NewFakeClock(time.Now())
	startOperator(t, "", clk)
	const forDur = 5 * time.Minute
	harness.CreateTemporary(t, bed, newPolicy("kdreset", "kdreset", conditionTrigger(kernelDeadlock, forDur)))
	g.Eventually(func(g Gomega) {
		g.Expect(condition(g, "kdreset", v1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}, timeout).Should(Succeed())
	since := func(g Gomega) time.Time {
		c := candidate(harness.GetPolicy(g, bed, "kdreset"), node)
		g.Expect(c).NotTo(BeNil())
		return c.Since.Time
	}

	first := clk.Now()
	setCondition(g, node, kernelDeadlock, corev1.ConditionTrue)
	g.Eventually(since, timeout).Should(BeTemporally("~", first, time.Second))

	// Cleared three minutes in: the candidate goes.
	clk.Step(3 * time.Minute)
	setCondition(g, node, kernelDeadlock, corev1.ConditionFalse)
	g.Eventually(func(g Gomega) {
		g.Expect(candidate(harness.GetPolicy(g, bed, "kdreset"), node)).To(BeNil())
	}, timeout).Should(Succeed())

	// Back a minute later: a new clock. Five minutes after the first, but
	// only three after the second, nothing is raised.
	clk.Step(time.Minute)
	second := clk.Now()
	setCondition(g, node, kernelDeadlock, corev1.ConditionTrue)
	g.Eventually(since, timeout).Should(BeTemporally("~", second, time.Second))
	clk.Step(3 * time.Minute)
	poke(g, "kdreset")
	g.Eventually(func(g Gomega) {
		g.Expect(harness.GetPolicy(g, bed, "kdreset").Status.LastEvaluationTime.Time).To(BeTemporally("~", clk.Now(), time.Second))
	}, timeout).Should(Succeed())
	g.Expect(harness.PolicyMaintenances(g, bed, "kdreset")).To(BeEmpty())

	// The writer says the condition changed again since (it went and came
	// back between two of the operator's looks): the clock starts at that
	// change.
	third := clk.Now().Truncate(time.Second)
	setCondition(g, node, kernelDeadlock, corev1.ConditionTrue, third)
	g.Eventually(since, timeout).Should(BeTemporally("==", third))
	clk.Step(forDur - time.Minute)
	poke(g, "kdreset")
	g.Consistently(func(g Gomega) {
		g.Expect(harness.PolicyMaintenances(g, bed, "kdreset")).To(BeEmpty(), "`for` counts from the last change")
	}, 2*time.Second, 250*time.Millisecond).Should(Succeed())

	clk.Step(time.Minute + time.Second)
	poke(g, "kdreset")
	g.Eventually(func(g Gomega) {
		reqs := harness.PolicyMaintenances(g, bed, "kdreset")[node]
		g.Expect(reqs).To(HaveLen(1))
		g.Expect(reqs[0].Spec.Reason).To(ContainSubstring("seen since " + third.UTC().Format(time.RFC3339)))
	}, timeout).Should(Succeed())
}

// The request goes through the gate and the node reboots; the condition,
// still set after the reboot and flapping, waits out the cooldown instead
// of rebooting the node again.
func TestNodeConditionCooldownAfterTheReboot(t *testing.T) {
	g := NewWithT(t)
	nodes := harness.CreateNodes(t, bed, "kdcool", "kdcool", 1)
	node := nodes[0]
	startOperator(t, "", nil)
	daemons := harness.RunDaemons(t, bed, "kdcool", true)
	stop := harness.RaiseMaintenances(t, bed, node)
	defer stop()

	p := newPolicy("kdcool", "kdcool", conditionTrigger(kernelDeadlock, 0))
	p.Spec.Cooldown = &metav1.Duration{Duration: time.Hour}
	harness.CreateTemporary(t, bed, p)
	setCondition(g, node, kernelDeadlock, corev1.ConditionTrue)

	g.Eventually(func(g Gomega) {
		reqs := harness.PolicyMaintenances(g, bed, "kdcool")[node]
		g.Expect(reqs).To(HaveLen(1))
		g.Expect(reqs[0].Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
	}, timeout).Should(Succeed())
	g.Expect(daemons.Count(node)).To(Equal(1))
	rebooted := harness.PolicyMaintenances(g, bed, "kdcool")[node][0].Status.PhaseTimes.Succeeded.Time

	for _, s := range []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionTrue} {
		setCondition(g, node, kernelDeadlock, s)
	}
	g.Eventually(func(g Gomega) {
		c := candidate(harness.GetPolicy(g, bed, "kdcool"), node)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.State).To(Equal(v1alpha1.CandidateCooldown))
		g.Expect(c.Until.Time).To(BeTemporally("~", rebooted.Add(time.Hour), time.Second))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(harness.PolicyMaintenances(g, bed, "kdcool")[node]).To(HaveLen(1))
		g.Expect(daemons.Count(node)).To(Equal(1))
	}, 3*time.Second, 250*time.Millisecond).Should(Succeed())
}

// A dry run lists the node it would reboot and raises nothing; suspended,
// the policy evaluates nothing, and a condition's change does not wake it
// to.
func TestNodeConditionDryRunAndSuspend(t *testing.T) {
	g := NewWithT(t)
	nodes := harness.CreateNodes(t, bed, "kddry", "kddry", 2)
	startOperator(t, "", nil)
	p := newPolicy("kddry", "kddry", conditionTrigger(kernelDeadlock, 0))
	p.Spec.DryRun = true
	harness.CreateTemporary(t, bed, p)
	setCondition(g, nodes[0], kernelDeadlock, corev1.ConditionTrue)
	g.Eventually(func(g Gomega) {
		pol := harness.GetPolicy(g, bed, "kddry")
		g.Expect(pol.Status.WouldRequest).To(Equal([]string{nodes[0]}))
		g.Expect(candidate(pol, nodes[0]).State).To(Equal(v1alpha1.CandidateWouldRequest))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(harness.PolicyMaintenances(g, bed, "kddry")).To(BeEmpty())
	}, 2*time.Second, 250*time.Millisecond).Should(Succeed())

	p = harness.GetPolicy(g, bed, "kddry")
	p.Spec.Suspend = true
	g.Expect(bed.Client.Update(context.Background(), p)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(condition(g, "kddry", v1alpha1.ReadyCondition).Reason).To(Equal("Suspended"))
		g.Expect(harness.GetPolicy(g, bed, "kddry").Status.Candidates).To(BeEmpty())
	}, timeout).Should(Succeed())
	setCondition(g, nodes[1], kernelDeadlock, corev1.ConditionTrue)
	g.Consistently(func(g Gomega) {
		pol := harness.GetPolicy(g, bed, "kddry")
		g.Expect(pol.Status.Candidates).To(BeEmpty())
		g.Expect(harness.PolicyMaintenances(g, bed, "kddry")).To(BeEmpty())
	}, 2*time.Second, 250*time.Millisecond).Should(Succeed())
}

// The sample is a policy the API server takes, and it starts as a dry run.
func TestNodeConditionSample(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join(testbed.RepoRoot(), "config", "samples", "rebootpolicy-kernel-deadlock.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	p := &v1alpha1.RebootPolicy{}
	g.Expect(yaml.UnmarshalStrict(raw, p)).To(Succeed())
	g.Expect(p.Spec.DryRun).To(BeTrue())
	p.Name = "kd-sample"
	harness.CreateTemporary(t, bed, p)
	got := harness.GetPolicy(g, bed, "kd-sample")
	g.Expect(got.Spec.NodeCondition).NotTo(BeNil())
	g.Expect(got.Spec.NodeCondition.Type).To(Equal(kernelDeadlock))
	g.Expect(got.Spec.NodeCondition.Status).To(Equal(corev1.ConditionTrue))
}
