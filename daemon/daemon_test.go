package daemon_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/operator/api/protocol"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
	"github.com/kmaint/kmaint/test/harness"
)

func rawMerge(data []byte) client.Patch { return client.RawPatch(types.MergePatchType, data) }

func TestRequestRebootIsRaisedWithinASecondAndSatisfiedByOneReboot(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	n := harness.StartNode(t, bed, "host-req", harness.NodeOptions{})
	// Wait for the daemon to be up: it reports its state once it has read
	// the journal.
	g.Eventually(func(g Gomega) { g.Expect(getNode(g, "host-req").Annotations).To(HaveKey(protocol.State)) }, timeout).Should(Succeed())

	out, err := harness.RequestReboot(ctx, n, 0, "kernel 6.12 installed")
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(string(out)).To(ContainSubstring("Reboot requested"))
	g.Eventually(func(g Gomega) {
		r := requested(g, "host-req")
		g.Expect(r.BootID).To(Equal(n.BootID()))
		g.Expect(r.Requests).To(HaveLen(1))
		g.Expect(r.Requests[0].Source).To(Equal(v1alpha1.SourceHost))
		g.Expect(r.Requests[0].Reason).To(Equal("kernel 6.12 installed"))
	}, time.Second, 20*time.Millisecond).Should(Succeed())

	first := n.BootID()
	approve(g, "host-req", first)
	g.Eventually(n.Reboots, timeout).Should(Equal(1))
	// After the reboot the request is cleared and never comes back.
	g.Eventually(func(g Gomega) {
		node := getNode(g, "host-req")
		g.Expect(node.Annotations).NotTo(HaveKey(protocol.RebootRequested))
		var st protocol.DaemonState
		_, err := protocol.Decode(node, protocol.State, &st)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.BootID).To(Equal(n.BootID()))
		g.Expect(st.Phase).To(Equal(protocol.DaemonIdle))
	}, timeout).Should(Succeed())
	g.Expect(n.BootID()).NotTo(Equal(first))
	// The stale approval names the old boot; the daemon must not act on it.
	g.Consistently(n.Reboots, 2*time.Second).Should(Equal(1))
}
