package e2e_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/sim"
)

// TestNodeConditionRebootsThroughTheGateOnce is node-problem-detector's
// KernelDeadlock on simulated nodes with a real journald each, whose
// kubelets write their conditions' heartbeats all along: a condition set on
// one node reboots it once through the gate (a new boot, its request
// Succeeded), and a condition that flaps on another (set, cleared, set
// again, several times, before and after its reboot) reboots that node once
// too. Both conditions are still set after the reboots, and the cooldown
// holds them.
func TestNodeConditionRebootsThroughTheGateOnce(t *testing.T) {
	harness.RequireRoot(t)
	logStateOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	const pool, policyName = "npd", "kernel-deadlock"
	const forDur = 2 * time.Second
	c, err := sim.Start(ctx, bed, sim.Config{
		Pools:         []sim.PoolSpec{{Name: pool, Nodes: 3, MaxUnavailable: intstr.FromInt32(1)}},
		Journal:       sim.Journald,
		Timing:        sim.Timing{Reboot: time.Second, Jitter: 500 * time.Millisecond, DaemonRebootTimeout: 10 * time.Second},
		PodsPerNode:   1,
		StatusRefresh: time.Second,
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { cleanUpPolicy(t, policyName) })
	t.Cleanup(c.Stop)
	harness.WatchBudget(t, bed, pool).FailAbove(1)
	g.Expect(c.StartOperator()).To(Succeed())

	nodes := c.Nodes()
	steady, flapping, quiet := nodes[0], nodes[1], nodes[2]
	boots := map[string]string{}
	for _, n := range nodes {
		boots[n.Name()] = n.BootID()
	}
	set := func(n sim.Node, s corev1.ConditionStatus) {
		t.Helper()
		g.Expect(gen.SetCondition(ctx, bed.Client, n.Name(), corev1.NodeCondition{
			Type: "KernelDeadlock", Status: s, Reason: "DockerHung", Message: "task docker:1234 blocked for more than 120 seconds."})).To(Succeed())
	}
	for _, n := range nodes {
		set(n, corev1.ConditionFalse)
	}

	p := &v1alpha1.RebootPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: v1alpha1.RebootPolicySpec{
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}},
			NodeCondition:         &v1alpha1.NodeConditionTrigger{Type: "KernelDeadlock", For: &metav1.Duration{Duration: forDur}},
			MaxConcurrentRequests: &intstr.IntOrString{Type: intstr.String, StrVal: "100%"},
		},
	}
	g.Expect(bed.Client.Create(ctx, p)).To(Succeed())

	// The flapping node's condition comes and goes faster than `for`,
	// then stays; the steady node's is set once.
	for range 3 {
		set(flapping, corev1.ConditionTrue)
		set(flapping, corev1.ConditionFalse)
	}
	set(steady, corev1.ConditionTrue)
	set(flapping, corev1.ConditionTrue)

	// Each reboots through the gate, once: a new boot, and its one request
	// Succeeded with the boots before and after. The condition flaps on
	// while the flapping node's request goes through.
	done := func(g Gomega, n sim.Node) {
		reqs := harness.PolicyMaintenances(g, bed, policyName)[n.Name()]
		g.Expect(reqs).To(HaveLen(1), "requests for %s", n.Name())
		nm := reqs[0]
		g.Expect(nm.Spec.Source).To(Equal(v1alpha1.SourceCondition))
		g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), n.Name())
		g.Expect(nm.Status.BootIDBefore).To(Equal(boots[n.Name()]))
		g.Expect(nm.Status.BootIDAfter).To(Equal(n.BootID()))
		g.Expect(n.BootID()).NotTo(Equal(boots[n.Name()]))
	}
	g.Eventually(func(g Gomega) {
		if harness.PolicyMaintenances(g, bed, policyName)[flapping.Name()] != nil {
			set(flapping, corev1.ConditionFalse)
			set(flapping, corev1.ConditionTrue)
		}
		done(g, steady)
		done(g, flapping)
	}, timeout, 250*time.Millisecond).Should(Succeed())

	// Back from their reboots, both conditions are still set (the
	// simulated node-problem-detector does not clear them), and the
	// flapping one goes on flapping: the cooldown holds both, and the quiet
	// node is left alone.
	for range 3 {
		set(flapping, corev1.ConditionFalse)
		set(flapping, corev1.ConditionTrue)
	}
	g.Eventually(func(g Gomega) {
		pol := harness.GetPolicy(g, bed, policyName)
		g.Expect(pol.Status.Candidates).To(HaveLen(2))
		for _, cand := range pol.Status.Candidates {
			g.Expect(cand.State).To(Equal(v1alpha1.CandidateCooldown), cand.Node)
		}
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(steady.Reboots()).To(Equal(1))
		g.Expect(flapping.Reboots()).To(Equal(1))
		g.Expect(quiet.Reboots()).To(BeZero())
		reqs := harness.PolicyMaintenances(g, bed, policyName)
		g.Expect(reqs).To(HaveLen(2))
		g.Expect(reqs[steady.Name()]).To(HaveLen(1))
		g.Expect(reqs[flapping.Name()]).To(HaveLen(1))
		g.Expect(harness.MaintenancesOf(g, bed, quiet.Name())).To(BeEmpty())
	}, 5*time.Second, 500*time.Millisecond).Should(Succeed())
	for _, n := range nodes {
		harness.ExpectSettled(g, bed, n.Name(), false)
	}
	g.Expect(harness.GetPolicy(g, bed, policyName).Status.RequestsRaised).To(BeEquivalentTo(2))
}
