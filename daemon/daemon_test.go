package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/node"
)

func rawMerge(data []byte) client.Patch { return client.RawPatch(types.MergePatchType, data) }

func TestRequestRebootIsRaisedWithinASecondAndSatisfiedByOneReboot(t *testing.T) {
	g := NewWithT(t)
	n := harness.StartNode(t, bed, "host-req", harness.NodeOptions{})
	// Wait for the daemon to be up: it reports its state once it has read
	// the journal.
	g.Eventually(func(g Gomega) { g.Expect(getNode(g, "host-req").Annotations).To(HaveKey(protocol.State)) }, timeout).Should(Succeed())

	out, err := harness.RequestReboot(t, n, 0, "kernel 6.12 installed")
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

// state reads the daemon's state annotation.
func state(g Gomega, name string) protocol.DaemonState {
	var st protocol.DaemonState
	_, err := protocol.Decode(getNode(g, name), protocol.State, &st)
	g.Expect(err).NotTo(HaveOccurred())
	return st
}

// startNode starts a simulated node and waits until its daemon has read its
// journal and reported.
func startNode(t *testing.T, name string, opts harness.NodeOptions) *node.Node {
	t.Helper()
	n := harness.StartNode(t, bed, name, opts)
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(state(g, name).BootID).To(Equal(n.BootID()))
	}, timeout).Should(Succeed())
	return n
}

func requestReboot(t *testing.T, n *node.Node, reason string) {
	t.Helper()
	out, err := harness.RequestReboot(t, n, 0, reason)
	if err != nil {
		t.Fatalf("request-reboot: %v: %s", err, out)
	}
}

func TestApprovalForAnotherBootIsIgnored(t *testing.T) {
	g := NewWithT(t)
	n := startNode(t, "other-boot", harness.NodeOptions{})
	requestReboot(t, n, "testing approvals")
	g.Eventually(func(g Gomega) []protocol.Request { return requested(g, "other-boot").Requests }, timeout).Should(HaveLen(1))
	approve(g, "other-boot", "00000000-0000-0000-0000-000000000000")
	g.Consistently(n.Reboots, 2*time.Second).Should(Equal(0))
	g.Expect(state(g, "other-boot").Phase).To(Equal(protocol.DaemonRequested))
}

func TestEntriesFromOtherUsersAreIgnored(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	n := startNode(t, "non-root", harness.NodeOptions{})
	// A user other than root writes an entry that looks exactly like a
	// request, kmaint's MESSAGE_ID and all. journald records the writer's
	// real uid in the trusted _UID field, which the daemon checks.
	fields := "MESSAGE_ID=" + journal.RequestMessageID + "\\nKMAINT_REQUEST_ID=forged\\nKMAINT_SOURCE=host\\nKMAINT_REASON=forged\\nMESSAGE=forged\\n"
	out, err := n.Exec(ctx, 65534, "sh", "-c", "printf '"+fields+"' | logger --journald")
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	// The entry is in the node's journal, as that user's.
	g.Eventually(func(g Gomega) string {
		out, err := n.Exec(ctx, 0, "journalctl", "--no-pager", "-o", "cat", "MESSAGE_ID="+journal.RequestMessageID, "_UID=65534")
		g.Expect(err).NotTo(HaveOccurred(), string(out))
		return string(out)
	}, timeout).Should(ContainSubstring("forged"))
	// request-reboot refuses to run for that user too.
	out, err = harness.RequestReboot(t, n, 65534, "also forged")
	g.Expect(err).To(HaveOccurred())
	g.Expect(string(out)).To(ContainSubstring("must run as root"))

	// A root request made afterwards is raised alone: the forged entry was
	// read before it and dropped.
	requestReboot(t, n, "genuine")
	g.Eventually(func(g Gomega) []protocol.Request { return requested(g, "non-root").Requests }, timeout).
		Should(ConsistOf(HaveField("Reason", "genuine")))
}

func TestRequestRebootRejectsBadReasons(t *testing.T) {
	g := NewWithT(t)
	n := startNode(t, "bad-reason", harness.NodeOptions{})
	for reason, want := range map[string]string{
		"":                       "the reason is empty",
		strings.Repeat("x", 513): "at most 512 are allowed",
		"kernel\nforged line":    "control character",
		"\x1b[2Jkernel":          "control character",
	} {
		out, err := harness.RequestReboot(t, n, 0, reason)
		g.Expect(err).To(HaveOccurred())
		g.Expect(string(out)).To(ContainSubstring(want))
	}
	g.Consistently(func(g Gomega) {
		g.Expect(getNode(g, "bad-reason").Annotations).NotTo(HaveKey(protocol.RebootRequested))
	}, time.Second).Should(Succeed())
}

// Killing the daemon at any point loses nothing and never reboots twice.
func TestDaemonKilledAtAnyMomentLosesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	n := startNode(t, "killed", harness.NodeOptions{})
	requestReboot(t, n, "before the kill")

	// Killed before approval: the request is still raised by the new daemon.
	n.KillDaemon()
	g.Expect(n.StartDaemon(ctx)).To(Succeed())
	g.Eventually(func(g Gomega) []protocol.Request { return requested(g, "killed").Requests }, timeout).
		Should(ConsistOf(HaveField("Reason", "before the kill")))

	// Killed right after approval: the restarted daemon reboots, once.
	first := n.BootID()
	approve(g, "killed", first)
	n.KillDaemon()
	g.Expect(n.StartDaemon(ctx)).To(Succeed())
	g.Eventually(n.Reboots, timeout).Should(Equal(1))

	// Killed right after the reboot: nothing is replayed. The reboot counts
	// when the rebooter is asked; the node is back once its boot ID changed
	// and the new boot's daemon reported.
	g.Eventually(func(g Gomega) {
		g.Expect(n.BootID()).NotTo(Equal(first))
		g.Expect(state(g, "killed").BootID).To(Equal(n.BootID()))
	}, timeout).Should(Succeed())
	n.KillDaemon()
	g.Expect(n.StartDaemon(ctx)).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(getNode(g, "killed").Annotations).NotTo(HaveKey(protocol.RebootRequested)) }, timeout).Should(Succeed())
	g.Consistently(n.Reboots, 2*time.Second).Should(Equal(1))
}

func TestRebootThatDoesNotHappenIsReportedDegraded(t *testing.T) {
	g := NewWithT(t)
	n := startNode(t, "stuck", harness.NodeOptions{RebootTimeout: 2 * time.Second})
	n.SetIgnoreReboots(true)
	requestReboot(t, n, "will not happen")
	g.Eventually(func(g Gomega) []protocol.Request { return requested(g, "stuck").Requests }, timeout).Should(HaveLen(1))
	approve(g, "stuck", n.BootID())
	g.Eventually(func(g Gomega) {
		st := state(g, "stuck")
		g.Expect(st.Phase).To(Equal(protocol.DaemonDegraded))
		g.Expect(st.Message).To(ContainSubstring("not asking again"))
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "Node", "stuck", "Warning") }, timeout).Should(ContainElement("RebootNotObserved"))
	g.Expect(n.Reboots()).To(Equal(0))
}

// An approval of the node's own boot that no admission covers was not
// written by the gate (which approves only a boot it admitted, with the
// admission beside it), but by someone else who may patch Nodes: the daemon
// does not reboot, and says so once, on the node, in an event and a metric.
func TestABareApprovalIsRefused(t *testing.T) {
	g := NewWithT(t)
	metrics := freeAddr(t)
	n := startNode(t, "bare-approval", harness.NodeOptions{MetricsAddr: metrics})
	requestReboot(t, n, "testing a forged approval")
	g.Eventually(func(g Gomega) []protocol.Request { return requested(g, "bare-approval").Requests }, timeout).Should(HaveLen(1))
	patch := []byte(`{"metadata":{"annotations":{"` + protocol.RebootApproved + `":"` + n.BootID() + `"}}}`)
	g.Expect(bed.Client.Patch(context.Background(), getNode(g, "bare-approval"), rawMerge(patch))).To(Succeed())

	g.Eventually(func(g Gomega) string { return state(g, "bare-approval").Message }, timeout).
		Should(ContainSubstring("refused: the node has no admission of this boot"))
	g.Consistently(n.Reboots, 2*time.Second).Should(Equal(0))
	g.Expect(state(g, "bare-approval").Phase).To(Equal(protocol.DaemonRequested))
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "Node", "bare-approval", "Warning") }, timeout).
		Should(ContainElement("ApprovalRefused"))
	g.Eventually(func(g Gomega) string {
		_, body := get(g, "http://"+metrics+"/metrics")
		return body
	}, timeout).Should(ContainSubstring(`kmaint_daemon_refused_approvals_total{node="bare-approval"} 1`))

	// The gate's approval, with its admission, reboots it.
	approve(g, "bare-approval", n.BootID())
	g.Eventually(n.Reboots, timeout).Should(Equal(1))
}

// A daemon shown the admission of another boot reboots for none of it:
// after a reboot the operator has not completed yet, the node still
// carries the admission and approval of the boot before. A request in the
// new boot is not approved by them, nor by an approval of the new boot
// written beside the old admission: the gate approves only the boot it
// admitted, in the same patch, so that approval is not the gate's.
func TestAnAdmissionOfAnotherBootApprovesNothing(t *testing.T) {
	g := NewWithT(t)
	n := startNode(t, "other-admission", harness.NodeOptions{})
	requestReboot(t, n, "first")
	g.Eventually(func(g Gomega) []protocol.Request { return requested(g, "other-admission").Requests }, timeout).Should(HaveLen(1))
	before := n.BootID()
	approve(g, "other-admission", before)
	g.Eventually(func(g Gomega) { g.Expect(state(g, "other-admission").BootID).NotTo(Equal(before)) }, timeout).Should(Succeed())
	g.Expect(n.Reboots()).To(Equal(1))

	// The boot before's admission and approval stay on the node.
	requestReboot(t, n, "second")
	g.Eventually(func(g Gomega) []protocol.Request { return requested(g, "other-admission").Requests }, timeout).
		Should(ConsistOf(HaveField("Reason", "second")))
	node := getNode(g, "other-admission")
	g.Expect(node.Annotations).To(HaveKeyWithValue(protocol.RebootApproved, before))
	g.Consistently(n.Reboots, 2*time.Second).Should(Equal(1))

	// An approval of this boot beside the boot before's admission.
	patch := []byte(`{"metadata":{"annotations":{"` + protocol.RebootApproved + `":"` + n.BootID() + `"}}}`)
	g.Expect(bed.Client.Patch(context.Background(), node, rawMerge(patch))).To(Succeed())
	g.Eventually(func(g Gomega) string { return state(g, "other-admission").Message }, timeout).
		Should(ContainSubstring("refused: the node's admission is of boot " + before))
	g.Consistently(n.Reboots, 2*time.Second).Should(Equal(1))
	g.Expect(state(g, "other-admission").Phase).To(Equal(protocol.DaemonRequested))

	// The gate's approval, with the admission of this boot, reboots it.
	approve(g, "other-admission", n.BootID())
	g.Eventually(n.Reboots, timeout).Should(Equal(2))
}
