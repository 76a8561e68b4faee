package harness

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/node"
	"github.com/kmaint/kmaint/test/testbed"
)

// MaybeRunDaemon runs kmaint-daemon instead of the tests when the test
// binary was started as a simulated node's daemon. Call it first in TestMain.
func MaybeRunDaemon() { node.MaybeRunDaemon() }

// NodeOptions tune a simulated node.
type NodeOptions struct {
	// Labels for the Node object.
	Labels []string
	// RebootTimeout is the daemon's; default 30s.
	RebootTimeout time.Duration
	// Fast reboots never report the node NotReady.
	Fast bool
	// MetricsAddr and ProbeAddr are the daemon's; default off.
	MetricsAddr, ProbeAddr string
	// VolatileJournal keeps the node's journal in its /run, lost at every
	// reboot, as on nodes without a persistent journal.
	VolatileJournal bool
	// ContainerNode runs the daemon as in a pod on a node that is itself a
	// container with a boot ID of its own (a systemd-nspawn machine): its
	// /proc/sys/kernel/random/boot_id is the host kernel's, not the one
	// journald stamps the node's entries with, and it is told the node's
	// with --boot-id-file, as the chart's daemon.bootIDFile does.
	ContainerNode bool
	// WithoutBootIDFile, with ContainerNode, leaves --boot-id-file out, as
	// an install that does not set daemon.bootIDFile on such nodes would.
	WithoutBootIDFile bool
	// DaemonArgs are more flags for the daemon (e.g. --sentinel-file).
	DaemonArgs []string
}

// StartNode registers a Node and starts a simulated node for it: its own
// journald and boot ID, and the real daemon (this test binary re-run).
// It needs root.
func StartNode(t testing.TB, bed *testbed.Bed, name string, opts NodeOptions) *node.Node {
	t.Helper()
	RequireRoot(t)
	ctx := context.Background()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := bed.WriteKubeconfig(kubeconfig, "node-"+name, "system:masters"); err != nil {
		t.Fatal(err)
	}
	boot := uuid.NewString()
	if err := gen.CreateNode(ctx, bed.Client, gen.Node(name, gen.Labels(opts.Labels...), gen.BootID(boot))); err != nil {
		t.Fatal(err)
	}
	if opts.RebootTimeout == 0 {
		opts.RebootTimeout = 30 * time.Second
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(NodeLog(dir))
	if err != nil {
		t.Fatal(err)
	}
	daemon := []string{self, "run", "--node-name", name, "--kubeconfig", kubeconfig,
		"--metrics-bind-address=" + or(opts.MetricsAddr, "0"), "--health-probe-bind-address=" + or(opts.ProbeAddr, "0"),
		"--reboot-timeout", opts.RebootTimeout.String()}
	daemon = append(daemon, opts.DaemonArgs...)
	if opts.ContainerNode {
		// In a mount namespace of its own, without the node's boot ID
		// mounted over the kernel's, as a container's fresh /proc is.
		daemon = append([]string{"unshare", "--mount", "--propagation", "private", "--",
			"sh", "-c", `umount /proc/sys/kernel/random/boot_id && exec "$@"`, "sh"}, daemon...)
		if !opts.WithoutBootIDFile {
			daemon = append(daemon, "--boot-id-file", node.BootIDFile(dir))
		}
	}
	n, err := node.Start(ctx, node.Config{
		Name:            name,
		Dir:             dir,
		BootID:          boot,
		Daemon:          daemon,
		Env:             []string{node.DaemonEnv + "=1"},
		Log:             logFile,
		VolatileJournal: opts.VolatileJournal,
		OnReboot: func(ctx context.Context, _, next string) error {
			if !opts.Fast {
				if err := gen.SetBoot(ctx, bed.Client, name, next, false); err != nil {
					return err
				}
			}
			return gen.SetBoot(ctx, bed.Client, name, next, true)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.Stop()
		_ = logFile.Close()
		if races, err := n.RaceReports(); err != nil || races != "" {
			t.Errorf("node %s: data races in its daemon (%v):\n%s", name, err, tail([]byte(races), 20000))
		}
		if t.Failed() {
			if b, err := os.ReadFile(logFile.Name()); err == nil {
				t.Logf("log of node %s:\n%s", name, tail(b, 6000))
			}
		}
	})
	return n
}

// RequireRoot stops a test that needs root (for a simulated node's mount
// namespace) when not root: a skip on a developer's machine, a failure on CI
// (CI set), where `make test` runs as root with journald installed and a
// skip would hide the tests that matter most.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("simulated nodes need root for their mount namespace, and CI must run them: run make test as root")
	}
	t.Skip("simulated nodes need root for their mount namespace; run make test as root (CI does)")
}

// CancelReboot runs `kmaint-daemon cancel-reboot` on the node as uid.
func CancelReboot(t testing.TB, n *node.Node, uid int, id string) ([]byte, error) {
	t.Helper()
	return runDaemonCommand(t, n, uid, "cancel-reboot", id)
}

// RequestReboot runs `kmaint-daemon request-reboot` on the node as uid.
func RequestReboot(t testing.TB, n *node.Node, uid int, reason string) ([]byte, error) {
	t.Helper()
	return runDaemonCommand(t, n, uid, "request-reboot", reason)
}

// runDaemonCommand runs `kmaint-daemon <command> <arg>` on the node as uid.
func runDaemonCommand(t testing.TB, n *node.Node, uid int, command, arg string) ([]byte, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if uid != 0 {
		// The test binary sits in a directory only root may enter.
		self = copyForEveryone(t, self)
	}
	return n.Exec(context.Background(), uid, "env", node.DaemonEnv+"=1", self, command, arg)
}

// copyForEveryone copies an executable where any user may run it.
func copyForEveryone(t testing.TB, path string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func tail(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return b[len(b)-n:]
}

// NodeLog is the file in a simulated node's Dir that receives the output of
// its journald and daemon.
func NodeLog(dir string) string { return filepath.Join(dir, "node.log") }

// StartSentinelWatcher runs `kmaint-daemon watch-sentinel` as uid, as the
// DaemonSet's sentinel container does, looking at file and writing report,
// until the test ends. The directories of both must let uid in.
func StartSentinelWatcher(t testing.TB, file, report string, interval time.Duration, uid int) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	self = copyForEveryone(t, self)
	id := strconv.Itoa(uid)
	cmd := exec.Command("setpriv", "--reuid", id, "--regid", id, "--clear-groups", "--",
		"env", node.DaemonEnv+"=1", self, "watch-sentinel", "--file", file, "--report", report, "--interval", interval.String())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		// A test binary built with -race reports a race to its output.
		if bytes.Contains(out.Bytes(), []byte("WARNING: DATA RACE")) {
			t.Errorf("watch-sentinel met a data race:\n%s", tail(out.Bytes(), 20000))
		} else if t.Failed() {
			t.Logf("output of watch-sentinel:\n%s", tail(out.Bytes(), 4000))
		}
	})
}
