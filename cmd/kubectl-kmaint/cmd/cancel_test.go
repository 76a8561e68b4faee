package cmd_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/node"
)

// maintenance creates a NodeMaintenance of node from source with status s,
// as the operator and the daemon would have left it.
func maintenance(t *testing.T, name, nodeName string, source v1alpha1.Source, s v1alpha1.NodeMaintenanceStatus) *v1alpha1.NodeMaintenance {
	t.Helper()
	ctx := context.Background()
	nm := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: nodeName, Reason: "kernel", Source: source},
	}
	if err := bed.Client.Create(ctx, nm); err != nil {
		t.Fatal(err)
	}
	s.RequestID = nm.RequestID()
	nm.Status = s
	if err := bed.Client.Status().Update(ctx, nm); err != nil {
		t.Fatal(err)
	}
	return nm
}

// patchNode changes a node's annotations as the daemon and the gate would.
func patchNode(g Gomega, name string, opts ...gen.NodeOption) {
	n := harness.GetNode(g, bed, name)
	base := n.DeepCopy()
	for _, o := range opts {
		o(n)
	}
	g.Expect(bed.Client.Patch(context.Background(), n, client.MergeFrom(base))).To(Succeed())
}

func exists(g Gomega, name string) bool {
	err := bed.Client.Get(context.Background(), types.NamespacedName{Name: name}, &v1alpha1.NodeMaintenance{})
	if apierrors.IsNotFound(err) {
		return false
	}
	g.Expect(err).NotTo(HaveOccurred())
	return true
}

// What cannot be cancelled from the cluster is refused, saying why and what
// to do instead, and left as it was.
func TestCancelRefusesWhatItCannotCancel(t *testing.T) {
	g := NewWithT(t)
	nodeName := harness.CreateNodes(t, bed, "cxr", "cxr", 1, gen.BootID("boot-a"))[0]
	approvedNode := harness.CreateNodes(t, bed, "cxa", "cxa", 1, gen.BootID("boot-a"))[0]

	host := maintenance(t, "cxr-host", nodeName, v1alpha1.SourceHost, v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseRequested, BootIDBefore: "boot-a"})
	config := maintenance(t, "cxr-config", nodeName, v1alpha1.SourceConfig, v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseRequested, BootIDBefore: "boot-a"})
	done := maintenance(t, "cxr-done", nodeName, v1alpha1.SourceAPI, v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseSucceeded, BootIDBefore: "boot-0", BootIDAfter: "boot-a"})
	failed := maintenance(t, "cxr-failed", nodeName, v1alpha1.SourceAPI, v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseFailed})
	approved := maintenance(t, "cxr-approved", nodeName, v1alpha1.SourceAPI, v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseApproved, BootIDBefore: "boot-a", JournaledBootID: "boot-a"})
	rebooting := maintenance(t, "cxr-rebooting", nodeName, v1alpha1.SourceSchedule, v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseRebooting, BootIDBefore: "boot-a", JournaledBootID: "boot-a"})
	// Still Draining in its status, but the node already shows the
	// approval of its boot: the status lags the node.
	lagging := maintenance(t, "cxa-lagging", approvedNode, v1alpha1.SourceAPI, v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseDraining, BootIDBefore: "boot-a", JournaledBootID: "boot-a"})
	patchNode(g, approvedNode, gen.RequestedIDs("boot-a", v1alpha1.SourceAPI, time.Now(), string(lagging.UID)), gen.Approved("boot-a"))

	for args, want := range map[string]string{
		"cancel no-such-nm":          `nodemaintenance "no-such-nm" not found (kubectl get nodemaintenances.kmaint.io)`,
		"cancel " + host.Name:        "records a request made on node cxr-0 itself (request " + host.Status.RequestID + "): cancel it there, as root: kmaint-daemon cancel-reboot " + host.Status.RequestID,
		"cancel " + config.Name:      "records a config request: it follows the pool's desiredConfig; pause the pool",
		"cancel " + done.Name:        "nodemaintenance cxr-done is already Succeeded: nothing to cancel",
		"cancel " + failed.Name:      "nodemaintenance cxr-failed is already Failed: nothing to cancel",
		"cancel " + approved.Name:    "refused: the reboot of nodemaintenance cxr-approved is approved (Approved)",
		"cancel " + rebooting.Name:   "refused: the reboot of nodemaintenance cxr-rebooting is approved (Rebooting)",
		"cancel " + lagging.Name:     "refused: node cxa-0's reboot is approved for boot boot-a, which request " + string(lagging.UID) + " is part of",
		"cancel cxr-done --wait=-1s": "--wait=-1s: give a duration of 0 or more",
		"cancel":                     "accepts 1 arg(s), received 0",
	} {
		_, err := run(t, strings.Fields(args)...)
		g.Expect(err).To(MatchError(ContainSubstring(want)), "kubectl kmaint %s", args)
	}
	for _, nm := range []*v1alpha1.NodeMaintenance{host, config, done, failed, approved, rebooting, lagging} {
		g.Expect(exists(g, nm.Name)).To(BeTrue(), "%s is left as it was", nm.Name)
	}
}

// A request its daemon has not journaled is cancelled by deleting it: the
// daemon journals only what it first reported to the object.
func TestCancelBeforeTheDaemonJournaledIt(t *testing.T) {
	g := NewWithT(t)
	nodeName := harness.CreateNodes(t, bed, "cxp", "cxp", 1)[0]
	nm := maintenance(t, "cxp-pending", nodeName, v1alpha1.SourceAPI, v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhasePending})
	out, err := run(t, "cancel", nm.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("nodemaintenance/cxp-pending cancelled: node cxp-0's daemon had not journaled it, and will not.\n"))
	g.Expect(exists(g, nm.Name)).To(BeFalse())
}

// startNode starts a simulated node with its own journald and the real
// daemon, and waits until the daemon has reported.
func startNode(t *testing.T, name, pool string) *node.Node {
	t.Helper()
	n := harness.StartNode(t, bed, name, harness.NodeOptions{Labels: []string{"pool", pool}})
	NewWithT(t).Eventually(func(g Gomega) {
		var st protocol.DaemonState
		_, err := protocol.Decode(harness.GetNode(g, bed, name), protocol.State, &st)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.BootID).To(Equal(n.BootID()))
	}, timeout).Should(Succeed())
	return n
}

// requestOn runs `kubectl kmaint request` and returns the NodeMaintenance
// once the node's daemon raised it.
func requestOn(t *testing.T, nodeName string) *v1alpha1.NodeMaintenance {
	t.Helper()
	g := NewWithT(t)
	_, err := run(t, "request", nodeName, "--reason", "kernel 6.12.9")
	g.Expect(err).NotTo(HaveOccurred())
	var nm v1alpha1.NodeMaintenance
	g.Eventually(func(g Gomega) {
		items := harness.MaintenancesOf(g, bed, nodeName)
		g.Expect(items).To(HaveLen(1))
		nm = items[0]
		g.Expect(nm.Status.JournaledBootID).NotTo(BeEmpty())
		var r protocol.Requested
		_, err := protocol.Decode(harness.GetNode(g, bed, nodeName), protocol.RebootRequested, &r)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r.Has(string(nm.UID))).To(BeTrue())
	}, timeout).Should(Succeed())
	return &nm
}

// journaledCancellations lists the cancellations in the node's journal.
func journaledCancellations(g Gomega, n *node.Node, id string) string {
	out, err := n.Exec(context.Background(), 0, "journalctl", "--no-pager", "-q", "-o", "cat", "MESSAGE_ID="+journal.CancelMessageID, "KMAINT_REQUEST_ID="+id)
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	return string(out)
}

// Before admission: the daemon journals the cancellation and withdraws the
// request; when the pool opens, nothing reboots.
func TestCancelBeforeAdmissionThroughTheRealDaemon(t *testing.T) {
	g := NewWithT(t)
	pool := gen.Pool("cxd", intstr.FromInt32(1))
	pool.Spec.Paused = true
	harness.CreateTemporary(t, bed, pool)
	n := startNode(t, "cxd-0", "cxd")
	harness.StartOperator(t, bed)
	nm := requestOn(t, "cxd-0")
	id := string(nm.UID)

	out, err := run(t, "cancel", nm.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("nodemaintenance/" + nm.Name + " deleted; node cxd-0's daemon withdraws request " + id))
	g.Expect(out).To(ContainSubstring("Request " + id + " cancelled on node cxd-0"))
	g.Expect(exists(g, nm.Name)).To(BeFalse())
	g.Expect(journaledCancellations(g, n, id)).To(ContainSubstring("its NodeMaintenance was deleted"))

	harness.PatchPool(g, bed, "cxd", func(p *v1alpha1.MaintenancePool) { p.Spec.Paused = false })
	g.Consistently(func(g Gomega) {
		g.Expect(n.Reboots()).To(Equal(0))
		node := harness.GetNode(g, bed, "cxd-0")
		g.Expect(node.Annotations).NotTo(HaveKey(protocol.Admitted))
		g.Expect(node.Spec.Unschedulable).To(BeFalse())
	}, 3*time.Second).Should(Succeed())
}

// While draining: the request is withdrawn, kmaint stops the drain and
// uncordons the node it cordoned, and nothing reboots.
func TestCancelWhileDrainingUncordonsThroughTheRealDaemon(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	harness.CreateTemporary(t, bed, gen.Pool("cxw", intstr.FromInt32(1)))
	n := startNode(t, "cxw-0", "cxw")
	// A pod its budget lets nobody evict holds the drain.
	harness.CreateNamespace(t, bed, "cxw")
	labels := map[string]string{"app": "held"}
	g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod("cxw", "held", "cxw-0", labels))).To(Succeed())
	g.Expect(gen.PDB(ctx, bed.Client, "cxw", "held", labels, 0)).To(Succeed())
	harness.StartOperator(t, bed)
	nm := requestOn(t, "cxw-0")
	g.Eventually(func(g Gomega) {
		g.Expect(harness.GetMaintenance(g, bed, nm.Name).Status.Phase).To(Equal(v1alpha1.PhaseDraining))
		g.Expect(harness.GetNode(g, bed, "cxw-0").Spec.Unschedulable).To(BeTrue())
	}, timeout).Should(Succeed())

	out, err := run(t, "cancel", nm.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("Request " + string(nm.UID) + " cancelled on node cxw-0"))
	g.Eventually(func(g Gomega) {
		node := harness.GetNode(g, bed, "cxw-0")
		g.Expect(node.Spec.Unschedulable).To(BeFalse(), "uncordoned")
		g.Expect(node.Annotations).NotTo(HaveKey(protocol.Admitted))
		g.Expect(node.Annotations).NotTo(HaveKey(protocol.Cordoned))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(n.Reboots()).To(Equal(0))
		g.Expect(harness.GetNode(g, bed, "cxw-0").Annotations).NotTo(HaveKey(protocol.RebootApproved))
	}, 3*time.Second).Should(Succeed())
}
