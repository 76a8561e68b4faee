package daemon_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/node"
)

// The reboot sentinel on simulated nodes with their own journald, the
// real daemon and, where a reboot is to happen, the real operator.

// sentinelRequests lists the node's NodeMaintenances with source sentinel.
func sentinelRequests(g Gomega, name string) []v1alpha1.NodeMaintenance {
	var out []v1alpha1.NodeMaintenance
	for _, nm := range harness.MaintenancesOf(g, bed, name) {
		if nm.Spec.Source == v1alpha1.SourceSentinel {
			out = append(out, nm)
		}
	}
	return out
}

// sentinelOf reads the sentinel's part of the daemon's state, of the node's
// current boot.
func sentinelOf(g Gomega, name string, n *node.Node) protocol.SentinelStatus {
	st := state(g, name)
	g.Expect(st.BootID).To(Equal(n.BootID()), "the daemon of the current boot has reported")
	g.Expect(st.Sentinel).NotTo(BeNil())
	return *st.Sentinel
}

// writeSentinel writes the sentinel as Debian's package tools do: the
// packages, then the file (here in that order, so that the first look sees
// both).
func writeSentinel(t *testing.T, path string, pkgs ...string) {
	t.Helper()
	if err := os.WriteFile(path+".pkgs", []byte(strings.Join(pkgs, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("*** System restart required ***\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A sentinel file asks for one reboot, through the gate; the same sentinel
// after that reboot is a reboot loop and is held, and said so on the Node,
// in an event and a metric; a changed sentinel asks again. Both with a
// persistent journal (the fingerprint is journaled with the request) and a
// volatile one (the Node remembers it).
func TestSentinelFileRebootsOnceThenHoldsALoop(t *testing.T) {
	for _, volatile := range []bool{false, true} {
		name := "sentinel-persistent"
		if volatile {
			name = "sentinel-volatile"
		}
		t.Run(name, func(t *testing.T) { testSentinelLoop(t, name, volatile) })
	}
}

func testSentinelLoop(t *testing.T, name string, volatile bool) {
	g := NewWithT(t)
	pool := name
	harness.Create(t, bed, gen.Pool(pool, intstr.FromInt32(1)))
	path := filepath.Join(t.TempDir(), "reboot-required")
	metrics := freeAddr(t)
	n := startNode(t, name, harness.NodeOptions{Labels: []string{"pool", pool}, VolatileJournal: volatile, MetricsAddr: metrics,
		DaemonArgs: []string{"--sentinel-file=" + path, "--sentinel-interval=1s"}})
	harness.StartOperator(t, bed)
	first := n.BootID()
	g.Eventually(func(g Gomega) {
		g.Expect(sentinelOf(g, name, n).State).To(Equal(protocol.SentinelClear))
	}, timeout).Should(Succeed())

	// The host's package tools say a reboot is needed.
	writeSentinel(t, path, "linux-image-6.1.0-18-amd64", "libc6")
	var asked v1alpha1.NodeMaintenance
	g.Eventually(func(g Gomega) {
		nms := sentinelRequests(g, name)
		g.Expect(nms).To(HaveLen(1))
		asked = nms[0]
		g.Expect(asked.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
	}, timeout).Should(Succeed())
	g.Expect(asked.Spec.Reason).To(ContainSubstring("packages linux-image-6.1.0-18-amd64, libc6"))
	g.Expect(asked.Status.BootIDBefore).To(Equal(first))
	g.Expect(n.Reboots()).To(Equal(1))
	second := n.BootID()
	g.Expect(second).NotTo(Equal(first))
	if volatile {
		g.Expect(journalOf(g, n, first)).To(BeEmpty(), "the journal really forgot the boot that asked")
	}

	// The sentinel survived the reboot (something recreates it at boot):
	// held, not asked for again. The state that says so is decided from
	// the same look that would have asked, and no request of this boot is
	// on the Node with it.
	g.Eventually(func(g Gomega) {
		node := getNode(g, name)
		g.Expect(node.Annotations).NotTo(HaveKey(protocol.RebootRequested))
		st := sentinelOf(g, name, n)
		g.Expect(st.State).To(Equal(protocol.SentinelRebootLoop))
		g.Expect(st.Message).To(ContainSubstring("unchanged since it asked for a reboot in boot " + first))
		g.Expect(harness.EventReasons(g, bed, "Node", name, "Warning")).To(ContainElement("RebootLoop"))
		_, body := get(g, "http://"+metrics+"/metrics")
		g.Expect(body).To(ContainSubstring(`kmaint_daemon_sentinel_state{node="` + name + `",state="rebootLoop"} 1`))
	}, timeout).Should(Succeed())
	g.Expect(sentinelRequests(g, name)).To(HaveLen(1))
	g.Expect(n.Reboots()).To(Equal(1))
	g.Expect(harness.GetNode(g, bed, name).Spec.Unschedulable).To(BeFalse())
	// And the plugin says so.
	var status bytes.Buffer
	g.Expect(cmd.Status(context.Background(), bed.Client, &status, cmd.StatusOptions{Pool: pool})).To(Succeed())
	g.Expect(status.String()).To(MatchRegexp(name + `\s+` + pool + `\s+Idle\s+reboot loop held: the reboot sentinel is unchanged since it asked`))

	// New packages: a new sentinel, one new request, one more reboot.
	writeSentinel(t, path, "linux-image-6.1.0-18-amd64", "libc6", "openssl")
	g.Eventually(func(g Gomega) {
		nms := sentinelRequests(g, name)
		g.Expect(nms).To(HaveLen(2))
		for _, nm := range nms {
			g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		}
	}, timeout).Should(Succeed())
	g.Expect(n.Reboots()).To(Equal(2))
	// And it is held again after that reboot, now naming the boot that
	// asked the second time; gone, it is clear.
	g.Eventually(func(g Gomega) {
		st := sentinelOf(g, name, n)
		g.Expect(st.State).To(Equal(protocol.SentinelRebootLoop))
		g.Expect(st.Message).To(ContainSubstring("in boot " + second))
	}, timeout).Should(Succeed())
	g.Expect(os.Remove(path)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(sentinelOf(g, name, n).State).To(Equal(protocol.SentinelClear))
		_, body := get(g, "http://"+metrics+"/metrics")
		g.Expect(body).To(ContainSubstring(`kmaint_daemon_sentinel_state{node="` + name + `",state="rebootLoop"} 0`))
	}, timeout).Should(Succeed())
	g.Expect(sentinelRequests(g, name)).To(HaveLen(2))
	g.Expect(n.Reboots()).To(Equal(2))
	g.Eventually(func(g Gomega) { harness.ExpectSettled(g, bed, name, false) }, timeout).Should(Succeed())
}

// A sentinel the daemon cannot read, or whose package list is malformed or
// huge, asks for nothing and says why; once fixed, it asks. No operator
// runs: nothing could reboot the node, and a request would show on it.
func TestSentinelFileThatCannotBeReadAsksForNothing(t *testing.T) {
	g := NewWithT(t)
	const name = "sentinel-unreadable"
	dir := t.TempDir()
	path := filepath.Join(dir, "reboot-required")
	n := startNode(t, name, harness.NodeOptions{DaemonArgs: []string{"--sentinel-file=" + path, "--sentinel-interval=1s"}})

	// expectError waits for the daemon to report an error that says want,
	// with no request on the Node.
	expectError := func(want string) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			node := getNode(g, name)
			st := sentinelOf(g, name, n)
			g.Expect(st.State).To(Equal(protocol.SentinelError))
			g.Expect(st.Message).To(ContainSubstring(want))
			g.Expect(node.Annotations).NotTo(HaveKey(protocol.RebootRequested))
		}, timeout).Should(Succeed())
	}
	writeSentinel(t, path, "libc6", "\x1b]0;owned\x07; rm -rf /")
	expectError("is malformed: line 2 is not a package name")
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "Node", name, "Warning") }, timeout).Should(ContainElement("SentinelUnreadable"))

	g.Expect(os.WriteFile(path+".pkgs", []byte(strings.Repeat("libc6\n", 20000)), 0o644)).To(Succeed())
	expectError("larger than 65536 bytes")

	// Not a file: a directory, then a FIFO, which a plain open would wait
	// on for ever.
	g.Expect(os.Remove(path + ".pkgs")).To(Succeed())
	g.Expect(os.Remove(path)).To(Succeed())
	g.Expect(os.Mkdir(path, 0o755)).To(Succeed())
	expectError("not a regular file")
	g.Expect(os.Remove(path)).To(Succeed())
	g.Expect(syscall.Mkfifo(path, 0o644)).To(Succeed())
	expectError("not a regular file")

	// Fixed: one request, with the packages.
	g.Expect(os.Remove(path)).To(Succeed())
	writeSentinel(t, path, "libc6")
	g.Eventually(func(g Gomega) {
		reqs := requested(g, name).Requests
		g.Expect(reqs).To(HaveLen(1))
		g.Expect(reqs[0].Source).To(Equal(v1alpha1.SourceSentinel))
		g.Expect(reqs[0].Reason).To(ContainSubstring("packages libc6"))
		g.Expect(sentinelOf(g, name, n).State).To(Equal(protocol.SentinelRequested))
	}, timeout).Should(Succeed())

	// Root withdraws it: the same sentinel does not ask again in this
	// boot; new packages do.
	id := requested(g, name).Requests[0].ID
	out, err := harness.CancelReboot(t, n, 0, id)
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Eventually(func(g Gomega) {
		r := requested(g, name)
		g.Expect(r.Requests).To(BeEmpty())
		g.Expect(r.Cancelled).To(ConsistOf(id))
		g.Expect(sentinelOf(g, name, n).State).To(Equal(protocol.SentinelCancelled))
	}, timeout).Should(Succeed())
	writeSentinel(t, path, "libc6", "openssl")
	g.Eventually(func(g Gomega) {
		reqs := requested(g, name).Requests
		g.Expect(reqs).To(HaveLen(1))
		g.Expect(reqs[0].ID).NotTo(Equal(id))
		g.Expect(reqs[0].Reason).To(ContainSubstring("packages libc6, openssl"))
	}, timeout).Should(Succeed())
	g.Expect(n.Reboots()).To(Equal(0))
}

// The sentinel command: exit 1 asks for a reboot, once however often it is
// run; 0 asks for nothing; any other exit code, or garbage, is reported and
// asks for nothing. A script stands in for needs-restarting -r.
func TestSentinelCommand(t *testing.T) {
	g := NewWithT(t)
	const name = "sentinel-command"
	dir := t.TempDir()
	script := filepath.Join(dir, "needs-restarting")
	// It prints out and exits with the code in code, as the test sets them.
	g.Expect(os.WriteFile(script, []byte("#!/bin/sh\ncat \""+dir+"/out\"\nexit \"$(cat \""+dir+"/code\")\"\n"), 0o755)).To(Succeed())
	set := func(code, out string) {
		t.Helper()
		g.Expect(os.WriteFile(filepath.Join(dir, "out"), []byte(out), 0o644)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, "code"), []byte(code), 0o644)).To(Succeed())
	}
	set("0", "No core libraries or services have been updated since boot-up.\nReboot should not be necessary.\n")
	n := startNode(t, name, harness.NodeOptions{DaemonArgs: []string{"--sentinel-command=" + script + " -r", "--sentinel-interval=1s"}})
	g.Eventually(func(g Gomega) {
		g.Expect(sentinelOf(g, name, n).State).To(Equal(protocol.SentinelClear))
	}, timeout).Should(Succeed())

	expectError := func(want string) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			st := sentinelOf(g, name, n)
			g.Expect(st.State).To(Equal(protocol.SentinelError))
			g.Expect(st.Message).To(ContainSubstring(want))
			g.Expect(getNode(g, name).Annotations).NotTo(HaveKey(protocol.RebootRequested))
		}, timeout).Should(Succeed())
	}
	set("2", "")
	expectError("exited 2, which says neither")
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "Node", name, "Warning") }, timeout).Should(ContainElement("SentinelUnreadable"))
	set("not a number", "\x00\xff garbage")
	expectError("exited")

	set("1", "Core libraries or services have been updated since boot-up:\n  * kernel\n\nReboot is required to fully utilize these updates.\n")
	g.Eventually(func(g Gomega) {
		reqs := requested(g, name).Requests
		g.Expect(reqs).To(HaveLen(1))
		g.Expect(reqs[0].Source).To(Equal(v1alpha1.SourceSentinel))
		g.Expect(reqs[0].Reason).To(ContainSubstring("exited 1): Core libraries or services have been updated since boot-up: * kernel"))
	}, timeout).Should(Succeed())
	// It goes on saying 1, now with more, and then fails: the state that
	// reports the failure comes after every look that said 1, and the one
	// request of the boot is still the only one.
	set("1", "Core libraries or services have been updated since boot-up:\n  * kernel\n  * glibc\n")
	g.Eventually(func(g Gomega) {
		g.Expect(sentinelOf(g, name, n).LastRequest.Latest).NotTo(BeEmpty())
	}, timeout).Should(Succeed())
	set("2", "")
	g.Eventually(func(g Gomega) {
		g.Expect(sentinelOf(g, name, n).State).To(Equal(protocol.SentinelError))
		g.Expect(requested(g, name).Requests).To(HaveLen(1))
	}, timeout).Should(Succeed())
	g.Expect(n.Reboots()).To(Equal(0))
}

// As installed: the sentinel file is read by watch-sentinel running as
// nobody, which reports to the daemon through a shared directory. A
// sentinel nobody may not read is reported, not acted on; once readable, it
// asks once.
func TestSentinelReportFromAContainerRunningAsNobody(t *testing.T) {
	g := NewWithT(t)
	const name = "sentinel-report"
	const nobody = 65534
	hostRun, shared := t.TempDir(), t.TempDir()
	for _, d := range []string{hostRun, filepath.Dir(hostRun)} {
		g.Expect(os.Chmod(d, 0o755)).To(Succeed())
	}
	// The shared volume: an emptyDir, writable by all.
	g.Expect(os.Chmod(shared, 0o777)).To(Succeed())
	g.Expect(os.Chmod(filepath.Dir(shared), 0o755)).To(Succeed())
	path, report := filepath.Join(hostRun, "reboot-required"), filepath.Join(shared, "report.json")
	harness.StartSentinelWatcher(t, path, report, time.Second, nobody)
	n := startNode(t, name, harness.NodeOptions{DaemonArgs: []string{"--sentinel-report=" + report, "--sentinel-interval=1s"}})
	g.Eventually(func(g Gomega) {
		g.Expect(sentinelOf(g, name, n).State).To(Equal(protocol.SentinelClear))
	}, timeout).Should(Succeed())

	writeSentinel(t, path, "libc6")
	g.Expect(os.Chmod(path, 0o600)).To(Succeed())
	g.Eventually(func(g Gomega) {
		st := sentinelOf(g, name, n)
		g.Expect(st.State).To(Equal(protocol.SentinelError))
		g.Expect(st.Message).To(ContainSubstring("permission denied"))
		g.Expect(getNode(g, name).Annotations).NotTo(HaveKey(protocol.RebootRequested))
	}, timeout).Should(Succeed())

	g.Expect(os.Chmod(path, 0o644)).To(Succeed())
	g.Eventually(func(g Gomega) {
		reqs := requested(g, name).Requests
		g.Expect(reqs).To(HaveLen(1))
		g.Expect(reqs[0].Source).To(Equal(v1alpha1.SourceSentinel))
		g.Expect(reqs[0].Reason).To(ContainSubstring("packages libc6"))
	}, timeout).Should(Succeed())
	g.Expect(n.Reboots()).To(Equal(0))
}
