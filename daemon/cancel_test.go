package daemon_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/node"
)

var requestIDIn = regexp.MustCompile(`\(request ([0-9a-f-]{36})\)`)

// requestRebootID runs request-reboot as root and returns the request id it
// printed.
func requestRebootID(t *testing.T, n *node.Node, reason string) string {
	t.Helper()
	out, err := harness.RequestReboot(t, n, 0, reason)
	if err != nil {
		t.Fatalf("request-reboot: %v: %s", err, out)
	}
	m := requestIDIn.FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("request-reboot printed no request id: %s", out)
	}
	return m[1]
}

// writeAs writes a journal entry with these fields as uid, through
// logger --journald, the way any process on the node could.
func writeAs(g Gomega, n *node.Node, uid int, fields ...string) {
	out, err := n.Exec(context.Background(), uid, "sh", "-c", "printf '"+strings.Join(fields, `\n`)+`\n' | logger --journald`)
	g.Expect(err).NotTo(HaveOccurred(), string(out))
}

// A request made on the host is cancelled on the host, by root, before its
// reboot is approved: the node never reboots for it, and its record says
// Cancelled.
func TestHostRequestCancelledBeforeApprovalNeverReboots(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pool := gen.Pool("hostcancel", intstr.FromInt32(1))
	pool.Spec.Paused = true
	g.Expect(bed.Client.Create(ctx, pool)).To(Succeed())
	n := startNode(t, "hostcancel", harness.NodeOptions{Labels: []string{"pool", "hostcancel"}})
	boot := n.BootID()
	harness.StartOperator(t, bed)

	id := requestRebootID(t, n, "kernel 6.12.9")
	keep := requestRebootID(t, n, "firmware")
	g.Eventually(func(g Gomega) {
		g.Expect(requested(g, "hostcancel").IDs()).To(ConsistOf(id, keep))
		g.Expect(harness.MaintenancesOf(g, bed, "hostcancel")).To(ContainElement(HaveField("Status.Phase", v1alpha1.PhaseRequested)))
	}, timeout).Should(Succeed())

	// Only root may cancel: cancel-reboot refuses other users, and an entry
	// another user forges is ignored by the daemon.
	out, err := harness.CancelReboot(t, n, 65534, id)
	g.Expect(err).To(HaveOccurred())
	g.Expect(string(out)).To(ContainSubstring("must run as root"))
	writeAs(g, n, 65534, "MESSAGE_ID="+journal.CancelMessageID, "KMAINT_REQUEST_ID="+id, "KMAINT_REASON=forged", "MESSAGE=forged cancel")
	g.Eventually(func(g Gomega) []string {
		return journalOf(g, n, boot, "MESSAGE_ID="+journal.CancelMessageID, "_UID=65534")
	}, timeout).Should(HaveLen(1))
	g.Consistently(func(g Gomega) {
		g.Expect(requested(g, "hostcancel").IDs()).To(ConsistOf(id, keep))
	}, 2*time.Second).Should(Succeed())

	// Bad ids are refused with what is wrong, and the ids that can be
	// cancelled.
	for arg, want := range map[string]string{
		"":                       "no request id given; this boot's requests that can be cancelled:\n  " + id,
		"no-such-request":        "no request no-such-request in this node's journal",
		"two words":              "holds a space or control character",
		"id\x1b[2J":              "holds a space or control character",
		strings.Repeat("x", 129): "ids are at most 128",
	} {
		out, err := harness.CancelReboot(t, n, 0, arg)
		g.Expect(err).To(HaveOccurred(), "cancel-reboot %q", arg)
		g.Expect(string(out)).To(ContainSubstring(want), "cancel-reboot %q", arg)
	}

	out, err = harness.CancelReboot(t, n, 0, id)
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(string(out)).To(ContainSubstring("Cancellation of request " + id + " (host: kernel 6.12.9) journaled"))
	g.Eventually(func(g Gomega) {
		r := requested(g, "hostcancel")
		g.Expect(r.IDs()).To(ConsistOf(keep))
		g.Expect(r.Cancelled).To(ConsistOf(id))
		g.Expect(harness.EventReasons(g, bed, "Node", "hostcancel", "Normal")).To(ContainElement("RequestCancelled"))
		var record *v1alpha1.NodeMaintenance
		for _, nm := range harness.MaintenancesOf(g, bed, "hostcancel") {
			if nm.RequestID() == id {
				record = &nm
			}
		}
		g.Expect(record).NotTo(BeNil())
		g.Expect(record.Status.Phase).To(Equal(v1alpha1.PhaseFailed))
		g.Expect(record.Status.Message).To(ContainSubstring("cancelled on node hostcancel"))
	}, timeout).Should(Succeed())
	out, err = harness.CancelReboot(t, n, 0, id)
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(string(out)).To(ContainSubstring("is already cancelled"))

	// Withdrawing the last one too: once the node shows it withdrawn (an
	// approval before that would refuse it), nothing reboots when the pool
	// opens.
	out, err = harness.CancelReboot(t, n, 0, keep)
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Eventually(func(g Gomega) {
		r := requested(g, "hostcancel")
		g.Expect(r.Requests).To(BeEmpty())
		g.Expect(r.Cancelled).To(ConsistOf(id, keep))
		g.Expect(state(g, "hostcancel").Phase).To(Equal(protocol.DaemonIdle))
	}, timeout).Should(Succeed())
	harness.PatchPool(g, bed, "hostcancel", func(p *v1alpha1.MaintenancePool) { p.Spec.Paused = false })
	g.Consistently(func(g Gomega) {
		g.Expect(n.Reboots()).To(Equal(0))
		node := getNode(g, "hostcancel")
		g.Expect(node.Spec.Unschedulable).To(BeFalse())
		g.Expect(node.Annotations).NotTo(HaveKey(protocol.Admitted))
		g.Expect(node.Annotations).NotTo(HaveKey(protocol.RebootApproved))
	}, 3*time.Second).Should(Succeed())
}

// Once the reboot is approved for a request, its cancellation is refused:
// the node was drained for it. Here the cancellation reaches the journal
// while the daemon is down and the approval is already on the node.
func TestCancellationAfterApprovalIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	n := startNode(t, "late-cancel", harness.NodeOptions{})
	id := requestRebootID(t, n, "kernel 6.12.9")
	g.Eventually(func(g Gomega) []string { return requested(g, "late-cancel").IDs() }, timeout).Should(ConsistOf(id))

	n.KillDaemon()
	approve(g, "late-cancel", n.BootID())
	out, err := harness.CancelReboot(t, n, 0, id)
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	// The machine holds its reboot a moment, as a real one shutting down
	// does, so the daemon's events are sent before it goes.
	n.SetIgnoreReboots(true)
	g.Expect(n.StartDaemon(ctx)).To(Succeed())

	g.Eventually(func(g Gomega) {
		st := state(g, "late-cancel")
		g.Expect(st.Phase).To(Equal(protocol.DaemonRebooting))
		g.Expect(st.Message).To(ContainSubstring(id))
		g.Expect(harness.EventReasons(g, bed, "Node", "late-cancel", "Warning")).To(ContainElement("CancelRefused"))
	}, timeout).Should(Succeed())
	g.Expect(requested(g, "late-cancel").Cancelled).To(BeEmpty())
	n.SetIgnoreReboots(false)
	g.Expect(n.Reboot(ctx)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(state(g, "late-cancel").BootID).To(Equal(n.BootID()))
	}, timeout).Should(Succeed())
	g.Consistently(n.Reboots, 2*time.Second).Should(Equal(1))

	// After the reboot the request is gone, satisfied: nothing to cancel.
	out, err = harness.CancelReboot(t, n, 0, id)
	g.Expect(err).To(HaveOccurred())
	g.Expect(string(out)).To(ContainSubstring("the reboot that ended that boot satisfied it"))
}

// The time a request carries orders the pool's queue. The writer's own
// KMAINT_TIME is taken only within a minute before journald received the
// entry: 0 does not jump the queue, and a future time is not believed.
func TestRequestTimesAreBoundedByTheJournalsReceiveTime(t *testing.T) {
	g := NewWithT(t)
	n := startNode(t, "times", harness.NodeOptions{})
	before := time.Now().Add(-time.Second)
	for id, kmaintTime := range map[string]string{"zero": "0", "future": "32503680000000000", "garbage": "soon"} {
		writeAs(g, n, 0, "MESSAGE_ID="+journal.RequestMessageID, "KMAINT_REQUEST_ID="+id, "KMAINT_SOURCE=host",
			"KMAINT_REASON=time "+id, "KMAINT_TIME="+kmaintTime, "MESSAGE=request "+id)
	}
	g.Eventually(func(g Gomega) []string { return requested(g, "times").IDs() }, timeout).Should(ConsistOf("zero", "future", "garbage"))
	after := time.Now().Add(time.Second)
	for _, r := range requested(g, "times").Requests {
		g.Expect(r.Time).To(BeTemporally(">=", before), "request %s", r.ID)
		g.Expect(r.Time).To(BeTemporally("<=", after), "request %s", r.ID)
	}
}
