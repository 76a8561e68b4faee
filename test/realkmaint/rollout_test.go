package realkmaint

import (
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/operator/api/protocol"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/realcluster"
	"github.com/kmaint/kmaint/test/testbed"
)

// rolloutPool is the pool of every node of the cluster, one at a time.
const rolloutPool = "real"

// rolloutOverEveryNode rolls a new config over a pool of all the nodes with
// maxUnavailable 1, as `kubectl kmaint rollout` does, while an independent
// watcher of the Nodes fails the test the moment two are unavailable at
// once. Every node must really reboot exactly once, come back uncordoned and
// report the new config, which its daemon learns from the journal of the
// boot before the reboot.
func rolloutOverEveryNode(t *testing.T, c *realcluster.Cluster, kc client.Client) {
	g := NewWithT(t)
	ctx := context.Background()
	bootsBefore := bootCounts(c)
	poolOfEveryNode(t, c, kc, rolloutPool)
	bed := &testbed.Bed{Config: c.RestConfig(), Client: kc, Scheme: kc.Scheme()}
	watcher := harness.WatchBudget(t, bed, rolloutPool).FailAbove(1)

	began := time.Now()
	g.Expect(cmd.Rollout(ctx, kc, &bytes.Buffer{}, cmd.RolloutOptions{Pool: rolloutPool, Config: "os-2"})).To(Succeed())
	for _, n := range c.Nodes() {
		g.Eventually(func(g Gomega) {
			node := expectSettled(g, kc, n.Name())
			g.Expect(node.Annotations).To(HaveKeyWithValue(protocol.CurrentConfig, "os-2"), n.Name())
		}, 2*timeout, time.Second).Should(Succeed())
	}
	t.Logf("config os-2 rolled over %d real nodes in %s", len(c.Nodes()), time.Since(began).Round(time.Second))
	expectRebootedOnce(g, c, bootsBefore, c.Nodes()...)
	most, moments := watcher.MostUnavailable()
	g.Expect(most).To(Equal(1), "the watcher saw one node at a time unavailable (over %d changes)", moments)
}

// poolOfEveryNode puts every node of the cluster into a new pool of that
// name with maxUnavailable 1, and at the end of t takes them out of it again
// and deletes it, so that the next test finds the nodes in the default pool.
func poolOfEveryNode(t *testing.T, c *realcluster.Cluster, kc client.Client, pool string) {
	g := NewWithT(t)
	ctx := context.Background()
	label := func(value *string) {
		for _, n := range c.Nodes() {
			var node corev1.Node
			g.Expect(kc.Get(ctx, client.ObjectKey{Name: n.Name()}, &node)).To(Succeed())
			patch := client.MergeFrom(node.DeepCopy())
			if value == nil {
				delete(node.Labels, "pool")
			} else {
				node.Labels["pool"] = *value
			}
			g.Expect(kc.Patch(ctx, &node, patch)).To(Succeed())
		}
	}
	label(&pool)
	g.Expect(kc.Create(ctx, gen.Pool(pool, intstr.FromInt32(1)))).To(Succeed())
	t.Cleanup(func() {
		g.Expect(kc.Delete(ctx, gen.Pool(pool, intstr.FromInt32(1)))).To(Succeed())
		label(nil)
	})
}
