package daemon_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/node"
)

// journalOf returns the node's journal entries of boot matching the
// journalctl matches, one per line.
func journalOf(g Gomega, n *node.Node, boot string, matches ...string) []string {
	args := append([]string{"journalctl", "--no-pager", "-q", "-o", "cat", "_BOOT_ID=" + strings.ReplaceAll(boot, "-", "")}, matches...)
	out, err := n.Exec(context.Background(), 0, args...)
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// A node without a persistent journal rolled a config forever: the daemon
// learned that a config was applied only from the journal of the boot
// before. Its state on the Node now says it.
func TestVolatileJournalConfigRolloutRebootsOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(bed.Client.Create(ctx, gen.Pool("volatile", intstr.FromInt32(1)))).To(Succeed())
	metrics := freeAddr(t)
	n := startNode(t, "volatile-cfg", harness.NodeOptions{Labels: []string{"pool", "volatile"}, VolatileJournal: true, MetricsAddr: metrics})
	first := n.BootID()
	harness.StartOperator(t, bed)

	harness.PatchPool(g, bed, "volatile", func(p *v1alpha1.MaintenancePool) { p.Spec.DesiredConfig = "os-2.0" })
	g.Eventually(func(g Gomega) {
		node := getNode(g, "volatile-cfg")
		g.Expect(node.Annotations).To(HaveKeyWithValue(protocol.CurrentConfig, "os-2.0"))
		harness.ExpectSettled(g, bed, "volatile-cfg", false)
	}, timeout).Should(Succeed())
	g.Expect(n.Reboots()).To(Equal(1))

	// The journal really is volatile: the boot before left nothing in it.
	g.Expect(n.BootID()).NotTo(Equal(first))
	g.Expect(journalOf(g, n, first)).To(BeEmpty())
	g.Expect(journalOf(g, n, n.BootID())).NotTo(BeEmpty())

	// And the daemon says so: in its state, an event and a metric.
	g.Eventually(func(g Gomega) {
		st := state(g, "volatile-cfg")
		g.Expect(st.BootID).To(Equal(n.BootID()))
		g.Expect(st.VolatileJournal).To(BeTrue())
		g.Expect(harness.EventReasons(g, bed, "Node", "volatile-cfg", "Normal")).To(ContainElement("VolatileJournal"))
		_, body := get(g, "http://"+metrics+"/metrics")
		g.Expect(body).To(ContainSubstring(`kmaint_daemon_journal_volatile{node="volatile-cfg"} 1`))
	}, timeout).Should(Succeed())

	// No second reboot: the new boot does not ask again for os-2.0.
	g.Consistently(func(g Gomega) {
		g.Expect(n.Reboots()).To(Equal(1))
		g.Expect(getNode(g, "volatile-cfg").Annotations).NotTo(HaveKey(protocol.RebootRequested))
	}, 3*time.Second).Should(Succeed())
	g.Expect(harness.GetPool(g, bed, "volatile").Status.Updated).To(BeEquivalentTo(1))
}

// A persistent journal is not called volatile after a reboot.
func TestPersistentJournalIsNotCalledVolatile(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	metrics := freeAddr(t)
	n := startNode(t, "persistent", harness.NodeOptions{MetricsAddr: metrics})
	first := n.BootID()
	// A persistent journal keeps the boots it saw: the boot before must
	// have left an entry. journald writes its own start first, but a
	// reboot within moments of the node's start (CI's full run once)
	// could come before it, and a boot the journal never saw is not one
	// it lost.
	g.Eventually(func(g Gomega) { g.Expect(journalOf(g, n, first)).NotTo(BeEmpty()) }, timeout).Should(Succeed())
	g.Expect(n.Reboot(ctx)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(state(g, "persistent").BootID).To(Equal(n.BootID()))
		_, body := get(g, "http://"+metrics+"/metrics")
		g.Expect(body).To(ContainSubstring(`kmaint_daemon_journal_volatile{node="persistent"} 0`))
	}, timeout).Should(Succeed())
	g.Expect(journalOf(g, n, first)).NotTo(BeEmpty(), "the boot before is kept")
	g.Expect(state(g, "persistent").VolatileJournal).To(BeFalse())
	g.Expect(harness.EventReasons(g, bed, "Node", "persistent", "")).NotTo(ContainElement("VolatileJournal"))
}

// A NodeMaintenance journaled in boot A and still Pending when the node
// comes back in boot B (the operator slow or down) was journaled again in
// B, which asked for a second reboot. The request was made for boot A, and
// any reboot satisfies it: B does not journal it.
func TestMaintenanceJournaledBeforeAVolatileRebootIsNotJournaledAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	n := startNode(t, "volatile-nm", harness.NodeOptions{VolatileJournal: true})
	first := n.BootID()

	// No operator yet: the NodeMaintenance is accepted by hand and stays
	// Pending whatever the daemon does.
	nm := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: "volatile-nm-kernel"},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: "volatile-nm", Reason: "kernel 6.12.9"},
	}
	g.Expect(bed.Client.Create(ctx, nm)).To(Succeed())
	nm.Status.Phase = v1alpha1.PhasePending
	g.Expect(bed.Client.Status().Update(ctx, nm)).To(Succeed())
	id := string(nm.UID)
	// ... and named on its Node, as the operator names it for the daemon.
	named := protocol.Encode([]protocol.APIRequest{{Name: nm.Name, UID: nm.UID}})
	g.Expect(bed.Client.Patch(ctx, getNode(g, "volatile-nm"), client.RawPatch(types.MergePatchType,
		fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, protocol.APIRequests, named)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := harness.GetMaintenance(g, bed, nm.Name)
		g.Expect(got.Status.JournaledBootID).To(Equal(first))
		g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhasePending))
		g.Expect(requested(g, "volatile-nm").IDs()).To(ConsistOf(id))
		g.Expect(journalOf(g, n, first, "KMAINT_REQUEST_ID="+id)).To(HaveLen(1))
	}, timeout).Should(Succeed())

	// Rebooted by hand, say: the journal of boot A is gone.
	g.Expect(n.Reboot(ctx)).To(Succeed())
	second := n.BootID()
	g.Eventually(func(g Gomega) {
		g.Expect(state(g, "volatile-nm").BootID).To(Equal(second))
		g.Expect(getNode(g, "volatile-nm").Annotations).NotTo(HaveKey(protocol.RebootRequested))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(journalOf(g, n, second, "KMAINT_REQUEST_ID="+id)).To(BeEmpty(), "not journaled again in boot B")
		g.Expect(getNode(g, "volatile-nm").Annotations).NotTo(HaveKey(protocol.RebootRequested))
	}, 3*time.Second).Should(Succeed())

	// The operator then finds it done by that reboot; nothing more reboots.
	harness.StartOperator(t, bed)
	g.Eventually(func(g Gomega) {
		got := harness.GetMaintenance(g, bed, nm.Name)
		g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		g.Expect(got.Status.BootIDBefore).To(Equal(first))
		g.Expect(got.Status.BootIDAfter).To(Equal(second))
	}, timeout).Should(Succeed())
	g.Consistently(n.Reboots, 2*time.Second).Should(Equal(1), "the reboot by hand only")
}
