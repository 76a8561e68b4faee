package realkmaint

import (
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/realcluster"
	"github.com/kmaint/kmaint/test/testbed"
)

// rolloutPool is the pool of every node of the cluster, one at a time.
const rolloutPool = "real"

// rolloutOverEveryNode rolls a new config over a pool of all the nodes with
// maxUnavailable 1, as `kubectl kmaint rollout` does, while real workloads
// run: a Deployment of one pod per node guarded by a PodDisruptionBudget, a
// DaemonSet, and a pod with emptyDir data. Two independent watchers fail
// the test the moment two nodes are unavailable at once or the budget's
// pods fall below its minAvailable. Every node must really reboot exactly
// once, come back uncordoned with no protocol annotation left, and report
// the new config, which its daemon learns from the journal of the boot
// before the reboot; every workload must run again, the DaemonSet's pods on
// every node. The pool, its nodes' labels and the workloads are gone when
// it ends, whatever happened.
func rolloutOverEveryNode(t *testing.T, c *realcluster.Cluster, kc client.Client) {
	g := NewWithT(t)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.RestConfig())
	g.Expect(err).NotTo(HaveOccurred())
	before := startWorkloads(t, cs, len(c.Nodes()))

	bootsBefore := bootCounts(c)
	labelNodes(t, kc, rolloutPool, nodeNames(c)...)
	pool := gen.Pool(rolloutPool, intstr.FromInt32(1))
	// The scratch pod's emptyDir holds data that a drain destroys, so a
	// drain evicts such a pod only when the pool says the data may go:
	// without deleteEmptyDirData it blocks every drain of its node until
	// the drain times out. Force stays off: every pod here has a controller
	// that puts it back elsewhere, and a bare pod, which a forced drain
	// deletes for good, should stop the rollout rather than be lost.
	pool.Spec.Drain.DeleteEmptyDirData = true
	createPool(t, kc, pool)
	bed := &testbed.Bed{Config: c.RestConfig(), Client: kc, Scheme: kc.Scheme()}
	nodeWatcher := harness.WatchBudget(t, bed, rolloutPool).FailAbove(1).ByAdmissions()
	podWatcher := harness.WatchHealthyPods(t, bed, workloadNamespace, "app="+guarded).FailBelow(guardedMinAvailable)

	began := time.Now()
	g.Expect(cmd.Rollout(ctx, kc, &bytes.Buffer{}, cmd.RolloutOptions{Pool: rolloutPool, Config: "os-2"})).To(Succeed())
	for _, n := range c.Nodes() {
		g.Eventually(func(g Gomega) {
			node := settledNode(g, kc, n.Name())
			g.Expect(node.Annotations).To(HaveKeyWithValue(protocol.CurrentConfig, "os-2"), n.Name())
		}, 2*timeout, time.Second).Should(Succeed())
	}
	t.Logf("config os-2 rolled over %d real nodes with their workloads in %s", len(c.Nodes()), time.Since(began).Round(time.Second))
	expectRebootedOnce(g, c, bootsBefore, c.Nodes()...)
	most, moments := nodeWatcher.MostUnavailable()
	g.Expect(most).To(Equal(1), "the watcher saw one node at a time unavailable (over %d changes)", moments)

	// Each node's guarded pod was evicted by its drain and came back on it
	// once the node did, one node after another: the budget's pods never
	// fell below minAvailable, and did reach it, at every drain.
	g.Eventually(func(g Gomega) {
		pods := healthyPods(g, cs, guarded)
		g.Expect(pods).To(HaveLen(len(c.Nodes())), "guarded pods Ready again")
		nodes := map[string]bool{}
		for _, p := range pods {
			g.Expect(before.guardedPods).NotTo(HaveKey(p.UID), "guarded pod %s on %s was never evicted", p.Name, p.Spec.NodeName)
			nodes[p.Spec.NodeName] = true
		}
		g.Expect(nodes).To(HaveLen(len(c.Nodes())), "one guarded pod per node")
	}, timeout, time.Second).Should(Succeed())
	fewest, worst, changes, err := podWatcher.Fewest()
	g.Expect(err).NotTo(HaveOccurred(), "the watcher of the guarded pods saw every change")
	t.Logf("the guarded pods over %d changes: fewest %s", changes, worst)
	g.Expect(fewest).To(Equal(guardedMinAvailable), "the drains evicted guarded pods, never below the budget's minAvailable")

	// The DaemonSet's pods stayed through the drains and started again
	// with their nodes; the scratch pod, its data given up, runs anew.
	g.Eventually(func(g Gomega) {
		started := daemonSetNodes(g, cs)
		g.Expect(started).To(HaveLen(len(c.Nodes())), "a DaemonSet pod Ready on every node")
		for node, at := range started {
			g.Expect(at).To(BeTemporally(">", began), "the DaemonSet's pod on %s started again after its node's reboot", node)
		}
		pods := healthyPods(g, cs, scratch)
		g.Expect(pods).To(HaveLen(1), "scratch pod Ready again")
		g.Expect(pods[0].UID).NotTo(Equal(before.scratchPod), "the scratch pod was evicted with its emptyDir")
	}, timeout, time.Second).Should(Succeed())
}
