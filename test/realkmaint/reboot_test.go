package realkmaint

import (
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/test/realcluster"
)

// rebootThroughKmaint asks for a reboot of one node as `kubectl kmaint
// request` does and follows it through the whole path on real parts: the
// operator admits it in the built-in default pool, cordons and drains the
// node (evicting whatever runs there, an operator replica perhaps), approves
// the reboot; the daemon in its pod asks the node's logind; the node really
// reboots, its kubelet registers a new boot ID, the daemon comes back in its
// pod and confirms; the NodeMaintenance is Succeeded with both boot IDs, the
// node is uncordoned with no protocol annotation left but the daemon's own,
// and no other node rebooted.
func rebootThroughKmaint(t *testing.T, c *realcluster.Cluster, kc client.Client) {
	g := NewWithT(t)
	ctx := context.Background()

	target := c.Nodes()[1]
	bootsBefore := bootCounts(c)
	before, err := target.BootID(ctx)
	g.Expect(err).NotTo(HaveOccurred())

	nm, err := cmd.Request(ctx, kc, &bytes.Buffer{}, cmd.RequestOptions{Node: target.Name(), Reason: "real reboot test"})
	g.Expect(err).NotTo(HaveOccurred())
	began := time.Now()

	var done v1alpha1.NodeMaintenance
	g.Eventually(func(g Gomega) {
		g.Expect(kc.Get(ctx, client.ObjectKeyFromObject(nm), &done)).To(Succeed())
		g.Expect(done.Status.Phase).NotTo(Equal(v1alpha1.PhaseFailed), "%+v", done.Status.Conditions)
		g.Expect(done.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
	}, 2*timeout, time.Second).Should(Succeed())
	t.Logf("%s rebooted through kmaint in %s", target.Name(), time.Since(began).Round(time.Second))

	after, err := target.BootID(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after).NotTo(Equal(before), "a new boot inside the node")
	g.Expect(done.Status.BootIDBefore).To(Equal(before))
	g.Expect(done.Status.BootIDAfter).To(Equal(after))
	g.Eventually(func(g Gomega) {
		node := settledNode(g, kc, target.Name())
		g.Expect(node.Status.NodeInfo.BootID).To(Equal(after))
	}, timeout, time.Second).Should(Succeed())
	expectRebootedOnce(g, c, bootsBefore, target)
}

// kmaintClient is a cluster admin's client that knows kmaint's kinds.
func kmaintClient(g Gomega, c *realcluster.Cluster) client.Client {
	kc, err := Client(c)
	g.Expect(err).NotTo(HaveOccurred())
	return kc
}
