package realkmaint

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/promtest"
	"github.com/kmaint/kmaint/test/realcluster"
	"github.com/kmaint/kmaint/test/testbed"
)

// fragmentationMetric is the series the metric policy reads, one per node
// labelled node=NAME, as a node exporter's would be; the test sets it.
const fragmentationMetric = "kmaint_test_memory_fragmentation"

// The values of fragmentationMetric: a node's memory is fragmented past
// fragmentationThreshold, as a reboot cures.
const (
	fragmentationThreshold = "0.9"
	fragmented             = 0.95
	unfragmented           = 0.2
)

// metricHold is the policy's for: how long a node's value must stay past
// the threshold before the policy asks for its reboot.
const metricHold = 10 * time.Second

// prometheusSeries is the test's Prometheus, scraping its exporter, which
// the operator reaches inside the cluster (Cluster.Expose).
type prometheusSeries struct {
	server   *promtest.Server
	exporter *promtest.Exporter
}

// set sets the node's fragmentation and waits until Prometheus has scraped
// it, so that what the operator asks next is the new value.
func (p prometheusSeries) set(t *testing.T, node string, value float64) {
	t.Helper()
	p.setSeries(t, fragmentationMetric, node, value)
}

// setSeries sets the node's series of metric and waits until Prometheus
// has scraped it.
func (p prometheusSeries) setSeries(t *testing.T, metric, node string, value float64) {
	t.Helper()
	labels := map[string]string{"node": node}
	p.exporter.Set(metric, labels, value)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := p.server.WaitForValue(ctx, metric, func(v model.Vector) bool {
		got, ok := promtest.Value(v, labels)
		return ok && got == value
	}); err != nil {
		t.Fatal(err)
	}
}

// metricPolicyReboots raises one node's fragmentation past a RebootPolicy's
// threshold for longer than its hold time, through a real Prometheus that
// the operator asks from inside the cluster: that node, and only it, is
// rebooted exactly once through the gate, by a NodeMaintenance of source
// metric that Succeeds. The reboot cures the node (its series falls back
// as soon as it boots again), and the policy records the values before and
// after; from then on the value stays below the threshold, so the one
// request is the last. The policy is deleted when the test ends.
func metricPolicyReboots(t *testing.T, c *realcluster.Cluster, kc client.Client, prom prometheusSeries) {
	g := NewWithT(t)
	ctx := context.Background()
	bed := &testbed.Bed{Config: c.RestConfig(), Client: kc, Scheme: kc.Scheme()}
	for _, n := range c.Nodes() {
		prom.set(t, n.Name(), unfragmented)
	}
	const name = "fragmented-memory"
	createPolicy(t, kc, &v1alpha1.RebootPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.RebootPolicySpec{
			Prometheus: &v1alpha1.PrometheusTrigger{
				Query:       fragmentationMetric,
				Threshold:   fragmentationThreshold,
				Comparison:  v1alpha1.GreaterThan,
				For:         &metav1.Duration{Duration: metricHold},
				Interval:    &metav1.Duration{Duration: time.Second},
				NodeLabel:   "node",
				MatchNodeBy: v1alpha1.MatchNodeName,
			},
			// A cooldown counts every reboot, and the tests before this
			// one rebooted every node minutes ago. What keeps the policy
			// from asking twice here is what keeps it in a real cluster
			// when a reboot cures: the value falls back, and the hold
			// starts afresh at the reboot.
			Cooldown: &metav1.Duration{},
		},
	})
	// The operator reaches Prometheus, and finds every node's series.
	g.Eventually(func(g Gomega) {
		p := harness.GetPolicy(g, bed, name)
		ready := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s: %s", ready.Reason, ready.Message)
		g.Expect(p.Status.LastEvaluationTime).NotTo(BeNil())
		g.Expect(p.Status.Candidates).To(BeEmpty())
	}, timeout, time.Second).Should(Succeed())

	target := c.Nodes()[2]
	bootsBefore := bootCounts(c)
	bootBefore, err := target.BootID(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	// Before the value changes: the operator cannot see it earlier.
	raised := time.Now()
	prom.set(t, target.Name(), fragmented)

	var nm v1alpha1.NodeMaintenance
	cured := false
	g.Eventually(func(g Gomega) {
		// The reboot cures the node: its series falls back the moment it
		// boots again, before its reboot is confirmed.
		if !cured && target.Boots() > bootsBefore[target.Name()] {
			prom.exporter.Set(fragmentationMetric, map[string]string{"node": target.Name()}, unfragmented)
			cured = true
		}
		byNode := harness.PolicyMaintenances(g, bed, name)
		g.Expect(byNode).To(HaveLen(1), "requests of the policy by node")
		g.Expect(byNode).To(HaveKey(target.Name()))
		g.Expect(byNode[target.Name()]).To(HaveLen(1))
		nm = byNode[target.Name()][0]
		g.Expect(nm.Status.Phase).NotTo(Equal(v1alpha1.PhaseFailed), "%+v", nm.Status.Conditions)
		g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
	}, 2*timeout, time.Second).Should(Succeed())
	t.Logf("%s rebooted for its metric %s after its value rose", target.Name(), time.Since(raised).Round(time.Second))
	g.Expect(cured).To(BeTrue(), "the node booted again")
	g.Expect(nm.Spec.Source).To(Equal(v1alpha1.SourceMetric))
	g.Expect(nm.CreationTimestamp.Time).To(BeTemporally(">=", raised.Add(metricHold).Truncate(time.Second)), "asked for only after the hold time")
	g.Expect(nm.Annotations).To(HaveKeyWithValue(v1alpha1.ValueAnnotation, strconv.FormatFloat(fragmented, 'g', -1, 64)))
	expectRebootedThroughGate(g, kc, target, &nm, bootBefore)

	// The policy saw the value fall after the reboot: from now on nothing
	// is past the threshold, so nothing more is asked for.
	g.Eventually(func(g Gomega) {
		p := harness.GetPolicy(g, bed, name)
		g.Expect(p.Status.Outcomes).To(HaveLen(1))
		o := p.Status.Outcomes[0]
		g.Expect(o.Node).To(Equal(target.Name()))
		g.Expect(o.NodeMaintenance).To(Equal(nm.Name))
		g.Expect(parseValue(g, o.ValueBefore)).To(Equal(fragmented))
		g.Expect(o.ValueAfter).NotTo(BeEmpty(), "a value evaluated after the reboot")
		g.Expect(parseValue(g, o.ValueAfter)).To(Equal(unfragmented))
		g.Expect(p.Status.Candidates).To(BeEmpty())
	}, timeout, time.Second).Should(Succeed())
	g.Expect(harness.PolicyMaintenances(g, bed, name)).To(HaveLen(1), "one request, for %s", target.Name())
	expectRebootedOnce(g, c, bootsBefore, target)
}

// schedulePolicyReboots puts two nodes in a pool of their own, one at a
// time, under a RebootPolicy whose cron schedule fires at the next minute:
// at that firing each of the two is rebooted exactly once through the gate,
// by a NodeMaintenance of source schedule, never both at once, and the
// third node not at all. The policy, the pool and the nodes' labels are
// deleted when the test ends, so that the schedule fires no more.
func schedulePolicyReboots(t *testing.T, c *realcluster.Cluster, kc client.Client) {
	g := NewWithT(t)
	bed := &testbed.Bed{Config: c.RestConfig(), Client: kc, Scheme: kc.Scheme()}
	const pool, name = "scheduled", "nightly"
	selected := []*realcluster.Node{c.Nodes()[0], c.Nodes()[1]}
	labelNodes(t, kc, pool, selected[0].Name(), selected[1].Name())
	createPool(t, kc, gen.Pool(pool, intstr.FromInt32(1)))
	watcher := harness.WatchBudget(t, bed, pool).FailAbove(1).ByAdmissions()
	bootsBefore := bootCounts(c)
	bootIDs := map[string]string{}
	for _, n := range selected {
		id, err := n.BootID(context.Background())
		g.Expect(err).NotTo(HaveOccurred())
		bootIDs[n.Name()] = id
	}

	// The next minute that is at least a few seconds away, so that the
	// policy exists before it: a new policy does not fire for times before
	// it was created. The five-field cron of the API counts minutes; at
	// this minute and hour, it fires again only tomorrow.
	fire := time.Now().UTC().Add(5 * time.Second).Truncate(time.Minute).Add(time.Minute)
	every := intstr.FromString("100%")
	createPolicy(t, kc, &v1alpha1.RebootPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.RebootPolicySpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}},
			Schedule:     &v1alpha1.ScheduleTrigger{Cron: fmt.Sprintf("%d %d * * *", fire.Minute(), fire.Hour()), TimeZone: "UTC"},
			// Both nodes are asked for at the firing; the pool's budget,
			// not the policy, takes them one at a time.
			MaxConcurrentRequests: &every,
			// The tests before this one rebooted every node minutes ago,
			// and a cooldown counts every reboot.
			Cooldown: &metav1.Duration{},
		},
	})
	t.Logf("schedule fires at %s", fire.Format(time.TimeOnly))

	g.Eventually(func(g Gomega) {
		byNode := harness.PolicyMaintenances(g, bed, name)
		g.Expect(byNode).To(HaveLen(len(selected)), "requests of the policy by node")
		for _, n := range selected {
			g.Expect(byNode[n.Name()]).To(HaveLen(1), "requests for %s", n.Name())
			nm := byNode[n.Name()][0]
			g.Expect(nm.Status.Phase).NotTo(Equal(v1alpha1.PhaseFailed), "%+v", nm.Status.Conditions)
			g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), n.Name())
		}
	}, time.Until(fire)+2*timeout, time.Second).Should(Succeed())
	t.Logf("%d nodes rebooted for the schedule, done %s after it fired", len(selected), time.Since(fire).Round(time.Second))

	byNode := harness.PolicyMaintenances(g, bed, name)
	for _, n := range selected {
		nm := byNode[n.Name()][0]
		g.Expect(nm.Spec.Source).To(Equal(v1alpha1.SourceSchedule))
		g.Expect(nm.CreationTimestamp.Time).To(BeTemporally(">=", fire), "asked for at the firing, not before")
		expectRebootedThroughGate(g, kc, n, &nm, bootIDs[n.Name()])
	}
	p := harness.GetPolicy(g, bed, name)
	g.Expect(p.Status.LastScheduleTime).NotTo(BeNil())
	g.Expect(p.Status.LastScheduleTime.Time).To(BeTemporally("==", fire), "the firing acted on")
	expectRebootedOnce(g, c, bootsBefore, selected...)
	most, moments := watcher.MostUnavailable()
	g.Expect(most).To(Equal(1), "the watcher saw one node of the pool at a time unavailable (over %d changes)", moments)
}

// expectRebootedThroughGate asserts that the request went through the gate
// (admitted and drained, then approved) and the node really rebooted for it: a new
// boot inside the node, the one its kubelet and the request report, and
// the node left Ready, uncordoned, with no protocol annotation of the
// reboot.
func expectRebootedThroughGate(g Gomega, kc client.Client, n *realcluster.Node, nm *v1alpha1.NodeMaintenance, bootBefore string) {
	ctx := context.Background()
	g.Expect(nm.Status.PhaseTimes.Draining).NotTo(BeNil(), "%s admitted and drained by the gate", nm.Name)
	g.Expect(nm.Status.PhaseTimes.Approved).NotTo(BeNil(), "%s approved by the gate", nm.Name)
	after, err := n.BootID(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after).NotTo(Equal(bootBefore), "a new boot inside %s", n.Name())
	g.Expect(nm.Status.BootIDBefore).To(Equal(bootBefore), nm.Name)
	g.Expect(nm.Status.BootIDAfter).To(Equal(after), nm.Name)
	g.Eventually(func(g Gomega) {
		var node corev1.Node
		g.Expect(kc.Get(ctx, client.ObjectKey{Name: n.Name()}, &node)).To(Succeed())
		g.Expect(node.Status.NodeInfo.BootID).To(Equal(after))
		expectSettled(g, &node)
	}, timeout, time.Second).Should(Succeed())
}

func parseValue(g Gomega, s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	g.Expect(err).NotTo(HaveOccurred(), "value %q", s)
	return v
}
