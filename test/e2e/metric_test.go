package e2e_test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/promtest"
	"github.com/kmaint/kmaint/test/sim"
)

// TestFragmentedNodesRebootInsideTheWindow is the metric scenario: node
// exporters report buddyinfo, a real Prometheus records the fragmentation
// index with the repository's rule, and a RebootPolicy like the sample asks
// for the nodes whose memory stays fragmented. Their requests wait while the
// pool's window is shut and go through once it opens: one reboot per node,
// after which the node's memory is unfragmented and the policy's outcome
// says so. The other nodes are left alone.
func TestFragmentedNodesRebootInsideTheWindow(t *testing.T) {
	promtest.Binary(t) // skip (or fail on CI) without Prometheus
	g := NewWithT(t)
	ctx := context.Background()
	const pool, policyName = "frag", "fragmentation"
	// Shut for now: it opens half an hour from now.
	shut := minuteWindow(time.Now().Add(30*time.Minute), 5*time.Minute)
	c, err := sim.Start(ctx, bed, sim.Config{
		Pools:   []sim.PoolSpec{{Name: pool, Nodes: 4, MaxUnavailable: intstr.FromInt32(2), Windows: []v1alpha1.MaintenanceWindow{shut}}},
		Journal: sim.Memory,
		Timing:  sim.Timing{Reboot: time.Second, DaemonRebootTimeout: 5 * time.Second},
		Metrics: &sim.MetricsConfig{Interval: time.Second},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { cleanUpPolicy(t, policyName) })
	t.Cleanup(c.Stop)
	g.Expect(c.StartOperator()).To(Succeed())

	p := fragmentationPolicy(policyName, pool, 3*time.Second, intstr.FromInt32(2))
	g.Expect(bed.Client.Create(ctx, p)).To(Succeed())

	nodes := []string{"frag-000", "frag-001", "frag-002", "frag-003"}
	fragmented := []string{"frag-001", "frag-003"}
	for _, n := range fragmented {
		index, err := c.SetFragmentation(n, 0.95)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(index).To(BeNumerically("~", 0.95, 0.001))
		// The real rule computes the index from the buddyinfo served.
		waitForIndex(t, c, n, index)
	}

	// Both are asked for, and wait for the window.
	g.Eventually(func(g Gomega) {
		reqs := policyRequests(g, policyName)
		g.Expect(reqs).To(HaveLen(2))
		for _, n := range fragmented {
			g.Expect(reqs).To(HaveKey(n))
			nm := reqs[n]
			g.Expect(nm.Spec.Source).To(Equal(v1alpha1.SourceMetric))
			g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseRequested))
			w := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.WaitingCondition)
			g.Expect(w).NotTo(BeNil(), "%s says why it waits", nm.Name)
			g.Expect(w.Reason).To(Equal(v1alpha1.OutsideWindowReason))
		}
	}, timeout).Should(Succeed())
	for _, n := range nodes {
		g.Expect(c.Node(n).Reboots()).To(BeZero(), "%s rebooted outside the window", n)
	}

	// The pool's window moves to the next minute (at least 5s away, so it
	// is still shut when the gate reads it), and opens by the clock.
	opens := time.Now().Add(5 * time.Second).Truncate(time.Minute).Add(time.Minute)
	harness.PatchPool(g, bed, pool, func(p *v1alpha1.MaintenancePool) {
		p.Spec.Windows = []v1alpha1.MaintenanceWindow{minuteWindow(opens, 10*time.Minute)}
	})
	t.Logf("window opens at %s", opens.Format(time.TimeOnly))

	g.Eventually(func(g Gomega) {
		reqs := policyRequests(g, policyName)
		for _, n := range fragmented {
			g.Expect(reqs[n].Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), n)
		}
	}, time.Until(opens)+timeout).Should(Succeed())
	for n, nm := range policyRequests(g, policyName) {
		approved := nm.Status.PhaseTimes.Approved
		g.Expect(approved).NotTo(BeNil(), nm.Name)
		g.Expect(approved.Time).NotTo(BeTemporally("<", opens), "%s approved before its window opened", n)
	}

	// The policy records what the reboots did: fragmented before, not after.
	g.Eventually(func(g Gomega) {
		got := map[string]v1alpha1.RebootOutcome{}
		for _, o := range harness.GetPolicy(g, bed, policyName).Status.Outcomes {
			got[o.Node] = o
		}
		g.Expect(got).To(HaveLen(2))
		for _, n := range fragmented {
			g.Expect(parse(g, got[n].ValueBefore)).To(BeNumerically(">", 0.9), n)
			g.Expect(parse(g, got[n].ValueAfter)).To(BeNumerically("<", 0.1), n)
		}
	}, timeout).Should(Succeed())

	// One reboot each, for the fragmented nodes only, and nothing more.
	want := map[string]int{"frag-001": 1, "frag-003": 1}
	g.Consistently(func(g Gomega) {
		for _, n := range nodes {
			g.Expect(c.Node(n).Reboots()).To(Equal(want[n]), "reboots of %s", n)
		}
		g.Expect(policyRequests(g, policyName)).To(HaveLen(2))
		g.Expect(harness.MaintenancesOf(g, bed, "frag-000")).To(BeEmpty())
		g.Expect(harness.MaintenancesOf(g, bed, "frag-002")).To(BeEmpty())
	}, 3*time.Second, 500*time.Millisecond).Should(Succeed())
	for _, n := range nodes {
		harness.ExpectSettled(g, bed, n, false)
	}
}

// minuteWindow is a daily window opening at the minute of at, in UTC.
func minuteWindow(at time.Time, d time.Duration) v1alpha1.MaintenanceWindow {
	at = at.UTC()
	return v1alpha1.MaintenanceWindow{
		Schedule: fmt.Sprintf("%d %d * * *", at.Minute(), at.Hour()),
		Duration: metav1.Duration{Duration: d},
		TimeZone: "UTC",
	}
}

// waitForIndex waits until Prometheus records the node's index.
func waitForIndex(t *testing.T, c *sim.Cluster, node string, index float64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	labels := map[string]string{"instance": c.Instance(node)}
	if _, err := c.Prometheus().WaitForValue(ctx, sim.FragmentationRecord, func(v model.Vector) bool {
		got, ok := promtest.Value(v, labels)
		return ok && math.Abs(got-index) < 1e-9
	}); err != nil {
		t.Fatal(err)
	}
}

// policyRequests are the policy's NodeMaintenances by node; more than one
// for a node fails.
func policyRequests(g Gomega, name string) map[string]v1alpha1.NodeMaintenance {
	out := map[string]v1alpha1.NodeMaintenance{}
	for node, nms := range harness.PolicyMaintenances(g, bed, name) {
		g.Expect(nms).To(HaveLen(1), "requests for %s", node)
		out[node] = nms[0]
	}
	return out
}

func parse(g Gomega, s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	g.Expect(err).NotTo(HaveOccurred(), "value %q", s)
	return v
}

// cleanUpPolicy deletes the policy and its requests, which the other tests
// of the package, sharing the API server, do not count on.
func cleanUpPolicy(t *testing.T, name string) {
	ctx := context.Background()
	if err := bed.Client.Delete(ctx, &v1alpha1.RebootPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}); client.IgnoreNotFound(err) != nil {
		t.Error(err)
	}
	if err := bed.Client.DeleteAllOf(ctx, &v1alpha1.NodeMaintenance{}, client.MatchingLabels{v1alpha1.PolicyLabel: name}); err != nil {
		t.Error(err)
	}
}

// fragmentationPolicy is the memory-fragmentation sample's policy for the
// simulated cluster: the recording rule past 0.9 for forDur, mapped to nodes
// by instance address, evaluated every second, with a long cooldown.
func fragmentationPolicy(name, pool string, forDur time.Duration, maxRequests intstr.IntOrString) *v1alpha1.RebootPolicy {
	return &v1alpha1.RebootPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.RebootPolicySpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}},
			Prometheus: &v1alpha1.PrometheusTrigger{
				Query:       sim.FragmentationRecord,
				Threshold:   "0.9",
				Comparison:  v1alpha1.GreaterThan,
				For:         &metav1.Duration{Duration: forDur},
				Interval:    &metav1.Duration{Duration: time.Second},
				NodeLabel:   "instance",
				MatchNodeBy: v1alpha1.MatchNodeAddress,
			},
			Cooldown:              &metav1.Duration{Duration: time.Hour},
			MaxConcurrentRequests: &maxRequests,
		},
	}
}
