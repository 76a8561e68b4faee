package realkmaint

import (
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/realcluster"
)

// The guarded rollout's pool, its health series and its settle time.
const (
	guardedPool     = "guarded"
	unhealthyMetric = "kmaint_realtest_node_unhealthy"
	realSettle      = 15 * time.Second
	realCheckEvery  = 5 * time.Second
	// guardedConfig is a config no other subtest rolls out: a node that
	// runs it already would not reboot for it.
	guardedConfig = "os-guarded"
)

// rolloutHaltsAtAnUnhealthyNode rolls a config over every node of a pool
// with a settle time and a health check asked of the real Prometheus the
// operator reaches in the cluster. The first node to reboot settles: it
// keeps its slot for the settle time after it is back, and its
// NodeMaintenance shows the phase. The second node comes back "unhealthy"
// (its series says so from its drain on): the pool halts, naming it and
// the check, and no further node is admitted, however long it waits. The
// series recovering does not resume a pool that waits for a person; `kubectl
// kmaint resume` does, and the rollout completes, every node rebooted once.
func rolloutHaltsAtAnUnhealthyNode(t *testing.T, c *realcluster.Cluster, kc client.Client, prom prometheusSeries) {
	g := NewWithT(t)
	ctx := context.Background()
	for _, n := range c.Nodes() {
		prom.setSeries(t, unhealthyMetric, n.Name(), 0)
	}
	bootsBefore := bootCounts(c)
	labelNodes(t, kc, guardedPool, nodeNames(c)...)
	pool := gen.Pool(guardedPool, intstr.FromInt32(1))
	pool.Spec.SettleTime = &metav1.Duration{Duration: realSettle}
	pool.Spec.HealthChecks = &v1alpha1.HealthChecks{
		Queries:  []v1alpha1.HealthCheck{{Name: "node-unhealthy", Query: unhealthyMetric + " == 1"}},
		Interval: &metav1.Duration{Duration: realCheckEvery},
	}
	createPool(t, kc, pool)

	began := time.Now()
	g.Expect(cmd.Rollout(ctx, kc, &bytes.Buffer{}, cmd.RolloutOptions{Pool: guardedPool, Config: guardedConfig})).To(Succeed())

	// The first node back settles, passes and frees its slot; the second
	// one admitted is made to come back unhealthy.
	var first, bad string
	g.Eventually(func(g Gomega) {
		for _, n := range c.Nodes() {
			st := readNode(g, kc, n.Name())
			switch {
			case first == "" && st.Admission != nil:
				first = n.Name()
			case first != "" && n.Name() != first && st.Admission != nil:
				bad = n.Name()
			}
		}
		g.Expect(bad).NotTo(BeEmpty(), "a second node admitted (first %q)", first)
	}, 2*timeout, 500*time.Millisecond).Should(Succeed())
	prom.setSeries(t, unhealthyMetric, bad, 1)
	t.Logf("%s rebooted first; %s admitted second, made to come back unhealthy", first, bad)

	settled := succeededRequest(g, kc, first, began)
	settling := settled.Status.PhaseTimes.Get(v1alpha1.PhaseSettling)
	g.Expect(settling).NotTo(BeNil(), "%s's request went through Settling", first)
	g.Expect(settled.Status.PhaseTimes.Succeeded.Sub(settling.Time)).To(BeNumerically(">=", realSettle-time.Second),
		"%s kept its slot for the settle time once back", first)

	g.Eventually(func(g Gomega) {
		var p v1alpha1.MaintenancePool
		g.Expect(kc.Get(ctx, client.ObjectKey{Name: guardedPool}, &p)).To(Succeed())
		halted := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.HaltedCondition)
		g.Expect(halted).NotTo(BeNil())
		g.Expect(halted.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(halted.Reason).To(Equal(v1alpha1.HealthCheckFailedReason))
		g.Expect(halted.Message).To(And(ContainSubstring(bad), ContainSubstring("node-unhealthy")))
		g.Expect(p.Status.Halt).NotTo(BeNil())
		g.Expect(p.Status.Halt.Nodes).To(ConsistOf(HaveField("Node", bad)))
	}, 2*timeout, time.Second).Should(Succeed())
	t.Logf("the pool halted at %s after %s", bad, time.Since(began).Round(time.Second))

	// Nothing more is admitted while it is halted, the series recovered
	// or not: the pool's resume is Manual.
	rest := otherThan(c, first, bad)
	notAdmitted := func(g Gomega) {
		for _, name := range rest {
			st := readNode(g, kc, name)
			g.Expect(st.Admission).To(BeNil(), "%s admitted while the pool is halted", name)
			g.Expect(st.CurrentConfig).NotTo(Equal(guardedConfig))
		}
		g.Expect(readNode(g, kc, bad).HealthCheckFailed()).To(BeTrue(), "%s keeps its failed check and its slot", bad)
	}
	g.Consistently(notAdmitted, 4*realCheckEvery, time.Second).Should(Succeed())
	prom.setSeries(t, unhealthyMetric, bad, 0)
	g.Consistently(notAdmitted, 3*realCheckEvery, time.Second).Should(Succeed())

	var out bytes.Buffer
	g.Expect(cmd.Resume(ctx, kc, &out, guardedPool)).To(Succeed())
	t.Logf("kubectl kmaint resume %s: %s", guardedPool, out.String())
	for _, n := range c.Nodes() {
		g.Eventually(func(g Gomega) {
			node := settledNode(g, kc, n.Name())
			g.Expect(node.Annotations).To(HaveKeyWithValue(protocol.CurrentConfig, guardedConfig), n.Name())
			g.Expect(node.Annotations).NotTo(HaveKey(protocol.Settling), n.Name())
		}, 2*timeout, time.Second).Should(Succeed())
	}
	t.Logf("config os-guarded rolled over %d real nodes, halted once, in %s", len(c.Nodes()), time.Since(began).Round(time.Second))
	expectRebootedOnce(g, c, bootsBefore, c.Nodes()...)
}

// readNode reads a node as the protocol sees it.
func readNode(g Gomega, kc client.Client, name string) protocol.NodeState {
	var node corev1.Node
	g.ExpectWithOffset(1, kc.Get(context.Background(), client.ObjectKey{Name: name}, &node)).To(Succeed())
	st, err := protocol.Read(&node)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return st
}

// succeededRequest waits for the node's request created after since to
// succeed, and returns it.
func succeededRequest(g Gomega, kc client.Client, node string, since time.Time) v1alpha1.NodeMaintenance {
	var done v1alpha1.NodeMaintenance
	g.EventuallyWithOffset(1, func(g Gomega) {
		var nms v1alpha1.NodeMaintenanceList
		g.Expect(kc.List(context.Background(), &nms)).To(Succeed())
		found := false
		for _, nm := range nms.Items {
			if nm.Spec.NodeName == node && !nm.CreationTimestamp.Time.Before(since.Truncate(time.Second)) {
				done, found = nm, true
			}
		}
		g.Expect(found).To(BeTrue(), "a request for %s", node)
		g.Expect(done.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), "%s: %s", node, done.Status.Message)
	}, 2*timeout, time.Second).Should(Succeed())
	return done
}

// otherThan names the cluster's nodes but these.
func otherThan(c *realcluster.Cluster, names ...string) []string {
	var out []string
	for _, n := range c.Nodes() {
		keep := true
		for _, name := range names {
			keep = keep && n.Name() != name
		}
		if keep {
			out = append(out, n.Name())
		}
	}
	return out
}
