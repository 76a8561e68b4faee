package realkmaint

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/realcluster"
)

// bootCounts is how many times each node of c has booted so far.
func bootCounts(c *realcluster.Cluster) map[string]int {
	boots := map[string]int{}
	for _, n := range c.Nodes() {
		boots[n.Name()] = n.Boots()
	}
	return boots
}

// expectRebootedOnce: each of rebooted booted exactly once since before
// (bootCounts), and no other node of c booted at all.
func expectRebootedOnce(g Gomega, c *realcluster.Cluster, before map[string]int, rebooted ...*realcluster.Node) {
	for _, n := range c.Nodes() {
		want := before[n.Name()]
		for _, r := range rebooted {
			if r == n {
				want++
			}
		}
		g.ExpectWithOffset(1, n.Boots()).To(Equal(want), "boots of %s", n.Name())
	}
}

// expectNoProtocolAnnotation: nothing of a request is left on the node but
// the daemon's own state.
func expectNoProtocolAnnotation(g Gomega, node *corev1.Node) {
	for _, key := range []string{protocol.RebootRequested, protocol.RebootApproved, protocol.Admitted, protocol.Cordoned,
		protocol.RebootUnconfirmed, protocol.DrainFailed, protocol.NodeNotBack} {
		g.ExpectWithOffset(1, node.Annotations).NotTo(HaveKey(key), "%s on %s", key, node.Name)
	}
}

// expectSettled asserts that kmaint left the node as it found it: Ready,
// uncordoned, and no annotation of a reboot in progress or failed.
func expectSettled(g Gomega, node *corev1.Node) {
	g.Expect(realcluster.NodeReady(node)).To(BeTrue(), "%s Ready", node.Name)
	g.Expect(node.Spec.Unschedulable).To(BeFalse(), "%s uncordoned", node.Name)
	expectNoProtocolAnnotation(g, node)
}

// settledNode gets the node and asserts it settled (expectSettled).
func settledNode(g Gomega, kc client.Client, name string) *corev1.Node {
	var node corev1.Node
	g.ExpectWithOffset(1, kc.Get(context.Background(), client.ObjectKey{Name: name}, &node)).To(Succeed())
	expectSettled(g, &node)
	return &node
}

// poolOfEveryNode puts every node of the cluster into a new pool of that
// name with maxUnavailable 1, and takes them out and deletes it when t ends,
// so that the next test finds the nodes in the default pool.
func poolOfEveryNode(t *testing.T, c *realcluster.Cluster, kc client.Client, pool string) {
	t.Helper()
	labelNodes(t, kc, pool, nodeNames(c)...)
	createPool(t, kc, gen.Pool(pool, intstr.FromInt32(1)))
}
