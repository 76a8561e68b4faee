package node

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Journald is the journal daemon the nodes run.
const Journald = "/lib/systemd/systemd-journald"

// journaldConf keeps each node's journal on its own disk directory (or, for
// a volatile journal, in the node's /run), off the host's kernel log, and
// without rate limits that would drop test entries.
const journaldConf = `[Journal]
Storage=%s
ReadKMsg=no
Audit=no
RateLimitBurst=0
ForwardToSyslog=no
ForwardToWall=no
`

// setupScript builds the node's mount namespace and then holds it open.
const setupScript = `set -e
mount -t tmpfs tmpfs /run/systemd
mkdir -p /run/systemd/journal
touch /run/systemd/journal/flushed
mount -t tmpfs tmpfs /run/log
mkdir -p /var/log/journal
mount --bind "$NODE_DIR/journal" /var/log/journal
mount --bind "$NODE_DIR/boot_id" /proc/sys/kernel/random/boot_id
mount --bind "$NODE_DIR/journald.conf" /etc/systemd/journald.conf
# Each node is its own machine; journald also needs a machine ID to start.
if [ -e /etc/machine-id ]; then mount --bind "$NODE_DIR/machine-id" /etc/machine-id; fi
echo ready
exec sleep infinity
`

// Config describes a node.
type Config struct {
	// Name is the node's name.
	Name string
	// Dir holds the node's disk: boot ID file, journal, logs.
	Dir string
	// Daemon is the daemon's command line; the node runs it in its
	// namespace, adding nothing.
	Daemon []string
	// BootID is the first boot's ID; empty picks one.
	BootID string
	// Env is the daemon's environment, on top of this process's.
	Env []string
	// VolatileJournal keeps the journal in the node's /run only
	// (Storage=volatile), emptied by every reboot as a tmpfs is.
	VolatileJournal bool
	// OnReboot is called for each reboot the daemon asks for, with the old
	// and new boot IDs, after the node's processes stopped and before they
	// start again: the place to play the kubelet.
	OnReboot func(ctx context.Context, oldBoot, newBoot string) error
	// Log receives the output of the node's processes.
	Log io.Writer
}

// Node is a running simulated node.
type Node struct {
	cfg    Config
	holder *exec.Cmd

	mu       sync.Mutex
	bootID   string
	journald *exec.Cmd
	daemon   *exec.Cmd
	reboots  int
	// ignoreReboots makes the node ignore the daemon's reboot, as a machine
	// whose reboot hangs or is refused would.
	ignoreReboots bool
	// noDaemonOnBoot keeps the daemon from starting when the node comes
	// back from a reboot, as a DaemonSet pod that never comes back would.
	noDaemonOnBoot bool
	// down is true while the node reboots: nothing starts on a machine
	// that is down, and the reboot starts the daemon of the new boot.
	down bool
	// stopped is true once Stop began: nothing starts after it.
	stopped bool
	// stop ends the hooks of a reboot under way (OnReboot's context) when
	// Stop begins.
	stop context.CancelFunc
	// running counts the daemons' watches and the reboots under way: Stop
	// waits for them, so that nothing the node does uses its Log or its Dir
	// after Stop (the caller closes and removes them).
	running sync.WaitGroup
}

// RebootLine is what the simulated rebooter prints to ask for a reboot.
const RebootLine = "KMAINT-SIMULATED-REBOOT"

// Start creates the node's namespace, journald and daemon.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "journal"), 0o755); err != nil {
		return nil, err
	}
	storage := "persistent"
	if cfg.VolatileJournal {
		storage = "volatile"
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir, "journald.conf"), []byte(fmt.Sprintf(journaldConf, storage)), 0o644); err != nil {
		return nil, err
	}
	machineID := strings.ReplaceAll(uuid.NewString(), "-", "")
	if err := os.WriteFile(filepath.Join(cfg.Dir, "machine-id"), []byte(machineID+"\n"), 0o444); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg}
	if cfg.BootID == "" {
		cfg.BootID = uuid.NewString()
	}
	if err := n.writeBootID(cfg.BootID); err != nil {
		return nil, err
	}
	holder := exec.Command("unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", setupScript)
	holder.Env = append(os.Environ(), "NODE_DIR="+cfg.Dir)
	holder.Stderr = cfg.Log
	holder.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := holder.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := holder.Start(); err != nil {
		return nil, fmt.Errorf("start namespace of node %s (needs root): %w", cfg.Name, err)
	}
	n.holder = holder
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		n.Stop()
		return nil, fmt.Errorf("set up namespace of node %s: %q %v (see its log)", cfg.Name, line, err)
	}
	if err := n.startJournald(); err != nil {
		n.Stop()
		return nil, err
	}
	if err := n.StartDaemon(ctx); err != nil {
		n.Stop()
		return nil, err
	}
	return n, nil
}

// Dir returns the node's Dir.
func (n *Node) Dir() string { return n.cfg.Dir }

// BootID returns the node's current boot ID.
func (n *Node) BootID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.bootID
}

// Reboots returns how many reboots the node has done, counting a second
// ask of one daemon process as one more.
func (n *Node) Reboots() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.reboots
}

// SetIgnoreReboots makes the node ignore its daemon's reboots, or stop
// ignoring them.
func (n *Node) SetIgnoreReboots(ignore bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ignoreReboots = ignore
}

// SetNoDaemonOnBoot keeps the daemon from starting after the node's next
// reboots (true), or lets it start again (false); StartDaemon still starts
// it by hand.
func (n *Node) SetNoDaemonOnBoot(absent bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.noDaemonOnBoot = absent
}

func (n *Node) writeBootID(id string) error {
	n.bootID = id
	return os.WriteFile(BootIDFile(n.cfg.Dir), []byte(id+"\n"), 0o644)
}

// BootIDFile is the file in a node's Dir that holds its current boot ID,
// mounted over /proc/sys/kernel/random/boot_id in its namespace and
// rewritten in place by each reboot.
func BootIDFile(dir string) string { return filepath.Join(dir, "boot_id") }

// command returns a command that runs inside the node's namespace.
func (n *Node) command(args ...string) *exec.Cmd {
	full := append([]string{"--target", strconv.Itoa(n.holder.Process.Pid), "--mount", "--"}, args...)
	cmd := exec.Command("nsenter", full...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// Exec runs a command in the node's namespace as uid (0 for root) and
// returns its combined output.
func (n *Node) Exec(ctx context.Context, uid int, args ...string) ([]byte, error) {
	prefix := []string{}
	if uid != 0 {
		prefix = []string{"setpriv", "--reuid", strconv.Itoa(uid), "--regid", strconv.Itoa(uid), "--clear-groups", "--"}
	}
	cmd := n.command(append(prefix, args...)...)
	cmd.Env = n.env()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Kill()
		case <-done:
		}
	}()
	return cmd.CombinedOutput()
}

// env is the environment of the programs the node runs: this process's,
// the Config's, and GORACE's log_path in the node's Dir (see RaceReports).
func (n *Node) env() []string {
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " log_path=" + filepath.Join(n.cfg.Dir, raceLog))
	return append(append(os.Environ(), n.cfg.Env...), "GORACE="+gorace)
}

// raceLog is the name in a node's Dir the race detector's reports take,
// with each process's ID after a dot.
const raceLog = "race"

// RaceReports returns the data races the race detector found in the
// programs the node ran, empty when it found none. A daemon built with
// -race (a test binary run again as the daemon, under make test) writes
// them to the node's Dir, one file per process: its output, in the node's
// Log, is read only when a test fails, and a daemon killed at the test's
// end never exits with the race detector's failing status.
func (n *Node) RaceReports() (string, error) {
	files, err := filepath.Glob(filepath.Join(n.cfg.Dir, raceLog+".*"))
	if err != nil {
		return "", err
	}
	var reports strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("read the race detector's report of node %s: %w", n.cfg.Name, err)
		}
		reports.Write(b)
	}
	return reports.String(), nil
}

func (n *Node) startJournald() error {
	cmd := n.command(Journald)
	cmd.Stdout, cmd.Stderr = n.cfg.Log, n.cfg.Log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start journald on node %s: %w", n.cfg.Name, err)
	}
	// A reboot starts the new boot's journald while Stop may be ending the
	// node: it reads n.journald from another goroutine.
	n.mu.Lock()
	stopped := n.stopped
	if !stopped {
		n.journald = cmd
	}
	n.mu.Unlock()
	if stopped {
		kill(cmd)
		return fmt.Errorf("node %s was stopped while its journald started", n.cfg.Name)
	}
	// journald is ready once it has created its socket; the socket lives in
	// the namespace's /run, reached through the holder's root.
	sock := filepath.Join("/proc", strconv.Itoa(n.holder.Process.Pid), "root", "run/systemd/journal/socket")
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		fi, err := os.Stat(sock)
		return err == nil && fi.Mode()&os.ModeSocket != 0, nil
	})
	if err != nil {
		return fmt.Errorf("journald on node %s did not create its socket within 10s: %w", n.cfg.Name, err)
	}
	return nil
}

// StartDaemon starts the daemon, unless it runs or the node is down for a
// reboot, which starts it when the node is back.
func (n *Node) StartDaemon(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.daemon != nil || n.down {
		return nil
	}
	return n.startDaemonLocked(ctx)
}

// startDaemonLocked starts the daemon unless the node was stopped; n.mu is
// held.
func (n *Node) startDaemonLocked(ctx context.Context) error {
	if n.stopped {
		return nil
	}
	cmd := n.command(n.cfg.Daemon...)
	cmd.Env = n.env()
	cmd.Stderr = n.cfg.Log
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start daemon on node %s: %w", n.cfg.Name, err)
	}
	n.daemon = cmd
	n.running.Add(1)
	go n.watchDaemon(ctx, cmd, out, n.bootID)
	return nil
}

// watchDaemon forwards the output of the daemon started in boot and
// performs the reboot it asks for. Like logind, the node reboots once for
// any number of asks in one boot: an ask of a boot that is over, or made
// while the node is already going down (by a daemon restarted in between),
// changes nothing. A daemon process asks once: a second ask of the same
// process counts as a reboot of its own (see Reboots), so that it shows.
func (n *Node) watchDaemon(ctx context.Context, cmd *exec.Cmd, out io.Reader, boot string) {
	defer n.running.Done()
	defer n.reportExit(cmd)
	sc := bufio.NewScanner(out)
	asked := false
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != RebootLine {
			fmt.Fprintln(n.cfg.Log, sc.Text())
			continue
		}
		if asked {
			n.mu.Lock()
			n.reboots++
			n.mu.Unlock()
			fmt.Fprintf(n.cfg.Log, "node %s: its daemon asked for a second reboot in boot %s\n", n.cfg.Name, boot)
			continue
		}
		asked = true
		n.mu.Lock()
		ignore := n.ignoreReboots
		n.mu.Unlock()
		if ignore {
			continue
		}
		if err := n.reboot(ctx, boot); err != nil {
			fmt.Fprintf(n.cfg.Log, "node %s: reboot failed: %v\n", n.cfg.Name, err)
		}
	}
}

// reportExit says when the daemon ended by itself: nothing restarts it, so
// a test that waits on it would otherwise wait without a word.
func (n *Node) reportExit(cmd *exec.Cmd) {
	n.mu.Lock()
	own := n.daemon == cmd
	if own {
		n.daemon = nil
	}
	n.mu.Unlock()
	if own {
		fmt.Fprintf(n.cfg.Log, "node %s: daemon exited by itself: %v\n", n.cfg.Name, cmd.Wait())
	}
}

// Reboot reboots the node now, whatever its daemon thinks, as a person
// rebooting the machine by hand would.
func (n *Node) Reboot(ctx context.Context) error { return n.reboot(ctx, "") }

// KillDaemon kills the daemon at once, as a crash or an OOM kill would.
func (n *Node) KillDaemon() {
	n.mu.Lock()
	cmd := n.daemon
	n.daemon = nil
	n.mu.Unlock()
	kill(cmd)
}

func kill(cmd *exec.Cmd) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
}

// reboot stops everything the node runs, changes its boot ID and starts it
// all again. A reboot a daemon of boot from asked for is done only while
// that boot runs and the node is not already going down: like logind, the
// machine reboots once however often it is asked in one boot. An empty from
// is a reboot by hand.
func (n *Node) reboot(ctx context.Context, from string) error {
	// Once asked, the machine reboots even if the daemon that asked has
	// died meanwhile, as with logind: whatever daemon runs now goes down.
	// While it is down nothing starts on it: a daemon started then (by a
	// test restarting a killed one) would run in the old boot on the new
	// boot's machine, which no real machine does.
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		return fmt.Errorf("node %s is stopped", n.cfg.Name)
	}
	if n.down || from != "" && from != n.bootID {
		n.mu.Unlock()
		return nil
	}
	daemon := n.daemon
	n.daemon = nil
	n.reboots++
	n.down = true
	old := n.bootID
	// Only the reboot's hooks end with Stop: ctx outlives the reboot, in
	// the new boot's daemon.
	hooks, cancel := context.WithCancel(ctx)
	defer cancel()
	n.stop = cancel
	n.running.Add(1)
	defer n.running.Done()
	n.mu.Unlock()
	err := n.restart(ctx, hooks, daemon, old)
	n.mu.Lock()
	n.down = false
	n.stop = nil
	n.mu.Unlock()
	return err
}

// restart is a reboot's work, while the node is down: it ends with the new
// boot's daemon started, unless the node keeps it from starting. OnReboot
// runs with hooks.
func (n *Node) restart(ctx, hooks context.Context, daemon *exec.Cmd, old string) error {
	kill(daemon)
	n.mu.Lock()
	journald := n.journald
	n.journald = nil
	n.mu.Unlock()
	kill(journald)
	if n.cfg.VolatileJournal {
		// /run is a tmpfs: a reboot empties it.
		if err := n.forgetRuntimeJournal(); err != nil {
			return err
		}
	}
	n.mu.Lock()
	err := n.writeBootID(uuid.NewString())
	next := n.bootID
	n.mu.Unlock()
	if err != nil {
		return err
	}
	if n.cfg.OnReboot != nil {
		if err := n.cfg.OnReboot(hooks, old, next); err != nil {
			return err
		}
	}
	if err := n.startJournald(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.noDaemonOnBoot {
		return nil
	}
	return n.startDaemonLocked(ctx)
}

// forgetRuntimeJournal empties the journal kept in the node's /run, which
// the node's namespace holds on a tmpfs of its own.
func (n *Node) forgetRuntimeJournal() error {
	dir := filepath.Join("/proc", strconv.Itoa(n.holder.Process.Pid), "root", "run/log/journal")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("empty the runtime journal of node %s: %w", n.cfg.Name, err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("empty the runtime journal of node %s: %w", n.cfg.Name, err)
		}
	}
	return nil
}

// Stop ends the node's processes and namespace. A reboot under way (its
// daemon asked, or a test) starts nothing after it: its OnReboot's context
// is cancelled, and Stop returns once it and the daemons' watches ended.
// Not from OnReboot, which Stop would wait for.
func (n *Node) Stop() {
	n.mu.Lock()
	n.stopped = true
	daemon, journald, stop := n.daemon, n.journald, n.stop
	n.daemon, n.journald = nil, nil
	n.mu.Unlock()
	if stop != nil {
		stop()
	}
	kill(daemon)
	kill(journald)
	n.running.Wait()
	if n.holder != nil && n.holder.Process != nil {
		_ = n.holder.Process.Kill()
		_ = n.holder.Wait()
	}
}

// Rebooter is the daemon's rebooter on a simulated node: it prints the line
// the node reboots on. Like logind's, it returns at once; the node then
// kills the daemon.
type Rebooter struct {
	Out io.Writer
}

// Reboot asks the node to reboot.
func (r Rebooter) Reboot(context.Context) error {
	_, err := fmt.Fprintln(r.Out, RebootLine)
	return err
}
