package node_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/node"
)

// TestNothingStartsWhileTheNodeIsDown: a daemon started while its node
// reboots (a test restarting a daemon it killed, as the e2e does) would run
// on the new boot's machine with whatever boot it read, and the reboot would
// then start none of its own. Nothing starts while the node is down; the
// reboot starts the new boot's daemon, once.
func TestNothingStartsWhileTheNodeIsDown(t *testing.T) {
	harness.RequireRoot(t)
	g := NewWithT(t)
	ctx := context.Background()
	dir := t.TempDir()
	starts := filepath.Join(dir, "starts")
	// The daemon notes the boot it starts in, then waits to be killed.
	script := "cat /proc/sys/kernel/random/boot_id >> " + starts + "; exec sleep 1000"
	var n *node.Node
	n, err := node.Start(ctx, node.Config{
		Name: "down", Dir: dir, Daemon: []string{"/bin/sh", "-c", script},
		OnReboot: func(ctx context.Context, _, _ string) error {
			// While the node is down, a test restarts the daemon it killed.
			n.KillDaemon()
			if err := n.StartDaemon(ctx); err != nil {
				return err
			}
			g.Consistently(func() []string { return lines(starts) }, time.Second).Should(HaveLen(1), "nothing starts while the node is down")
			return nil
		},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(n.Stop)
	g.Eventually(func() []string { return lines(starts) }, 10*time.Second).Should(HaveLen(1))
	first := n.BootID()

	g.Expect(n.Reboot(ctx)).To(Succeed())
	g.Expect(n.BootID()).NotTo(Equal(first))
	g.Eventually(func() []string { return lines(starts) }, 10*time.Second).Should(Equal([]string{first, n.BootID()}),
		"the reboot starts the new boot's daemon")
	g.Consistently(func() []string { return lines(starts) }, time.Second).Should(HaveLen(2))
}

// lines reads the file's lines; none while it does not exist.
func lines(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// TestStopEndsANodeThatReboots: a test may end while its node reboots (the
// daemon asked, the test's cleanup stops the node and closes its log, as
// harness.StartNode's does). Stop ends every process the node runs, and
// the reboot under way starts none after it nor uses the log: run under
// -race (make test), a reboot that went on after Stop read the node's
// journald beside it, and started the new boot's with the closed log.
func TestStopEndsANodeThatReboots(t *testing.T) {
	harness.RequireRoot(t)
	g := NewWithT(t)
	ctx := context.Background()
	// Where Stop falls in the reboot is the scheduler's choice: a few
	// tries cover the reboot's steps.
	for try := range 5 {
		dir := t.TempDir()
		log, err := os.Create(filepath.Join(dir, "log"))
		g.Expect(err).NotTo(HaveOccurred())
		n, err := node.Start(ctx, node.Config{Name: "stopped", Dir: dir, Daemon: []string{"sleep", "1000"}, Log: log})
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(n.Stop)
		out, err := n.Exec(ctx, 0, "readlink", "/proc/self/ns/mnt")
		g.Expect(err).NotTo(HaveOccurred(), "%s", out)
		namespace := strings.TrimSpace(string(out))

		rebooted := make(chan error, 1)
		go func() { rebooted <- n.Reboot(ctx) }()
		n.Stop()
		g.Expect(log.Close()).To(Succeed())
		<-rebooted // it may have ended before Stop, or failed for it
		g.Expect(inNamespace(namespace)).To(BeEmpty(), "try %d: processes left in the stopped node's namespace %s", try, namespace)
	}
}

// inNamespace lists the processes in the mount namespace ns (as
// /proc/PID/ns/mnt reads).
func inNamespace(ns string) []string {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var in []string
	for _, p := range procs {
		if link, err := os.Readlink(filepath.Join(p, "ns/mnt")); err == nil && link == ns {
			cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
			in = append(in, p+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return in
}
