package realcluster

import (
	"bytes"
	"context"
	"errors"
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
)

// exitReboot is systemd-nspawn's exit status when the machine asked to be
// rebooted (systemd-nspawn@.service restarts on it:
// RestartForceExitStatus=133).
const exitReboot = 133

// Node is a worker node: a systemd-nspawn machine booting the node root
// file system through an overlay of its own.
type Node struct {
	name  string
	index int
	dir   string // StateDir/nodes/NAME: upper, work, root, logs
	c     *Cluster
	cg    *cgroupSet

	mu     sync.Mutex
	nspawn *exec.Cmd // the current boot's systemd-nspawn
	boots  int
	stop   bool
	hold   *BootHold     // held down after the next reboot, when set
	done   chan struct{} // closed when the node stopped for good
	// stopping is closed when Stop begins, to end a hold.
	stopping chan struct{}
}

// Name is the node's name, as a machine and as a Kubernetes Node.
func (n *Node) Name() string { return n.name }

// IP is the node's address on the cluster's bridge.
func (n *Node) IP() string { return nodeIP(n.index) }

// Boots is how many times the node has booted.
func (n *Node) Boots() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.boots
}

// Dir is the node's state directory on the host: its overlay's upper layer
// (upper/) holds what the node wrote, its persistent journal included
// (upper/var/log/journal), and logs/ each boot's console.
func (n *Node) Dir() string { return n.dir }

func (n *Node) root() string { return filepath.Join(n.dir, "root") }

// prepare writes the node's own files into its overlay's upper layer
// before its first boot, and mounts the overlay in the cluster's mount
// namespace.
func (n *Node) prepare(ctx context.Context) error {
	for _, d := range []string{"upper/etc/kmaint-node", "upper/etc/kubernetes/pki", "work", "root", "logs"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o755); err != nil {
			return err
		}
	}
	crt, key, err := n.c.pki.issue("kubelet-"+n.name, identity{cn: "system:node:" + n.name, orgs: []string{"system:nodes"}})
	if err != nil {
		return err
	}
	net := n.c.net
	inside := "https://" + net.gateway + ":" + apiserverPort
	files := map[string][]byte{
		"etc/machine-id": []byte(strings.ReplaceAll(uuid.NewString(), "-", "") + "\n"),
		"etc/hostname":   []byte(n.name + "\n"),
		"etc/kmaint-node/node.env": fmt.Appendf(nil, "NODE_NAME=%s\nNODE_IP=%s\nNODE_PREFIX=%d\nGATEWAY=%s\nPOD_CIDR=%s\n",
			n.name, n.IP(), net.prefix, net.gateway, podCIDR(n.index)),
		"etc/kubernetes/kubelet.kubeconfig": kubeconfig(inside, n.c.pki.caPEM(), crt, key),
		"etc/kubernetes/pki/ca.crt":         n.c.pki.caPEM(),
	}
	for rel, b := range files {
		if err := os.WriteFile(filepath.Join(n.dir, "upper", rel), b, 0o644); err != nil {
			return err
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", n.c.cfg.NodeRootfs, filepath.Join(n.dir, "upper"), filepath.Join(n.dir, "work"))
	if out, err := n.c.run(ctx, n.c.ns.enter("mount", "-t", "overlay", "overlay", "-o", opts, n.root())...); err != nil {
		return fmt.Errorf("mount the overlay of node %s: %w: %s", n.name, err, out)
	}
	// Pods reach other nodes' pods through the control plane's namespace.
	if out, err := n.c.run(ctx, n.c.ns.enter("ip", "route", "replace", podCIDR(n.index), "via", n.IP())...); err != nil {
		return fmt.Errorf("route to the pods of node %s: %w: %s", n.name, err, out)
	}
	return nil
}

// nspawnArgs is the command line of one boot.
func (n *Node) nspawnArgs() []string {
	assets := n.c.cfg.ClusterAssets
	args := []string{"env", "SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=0", "systemd-nspawn",
		"--directory=" + n.root(), "--machine=" + n.name, "--boot",
		// No machined or systemd on the host to register with, and the
		// node's cgroup is the one it was started in (its own).
		"--register=no", "--keep-unit", "--settings=no",
		"--link-journal=no", "--console=read-only", "--resolv-conf=off", "--timezone=off",
		"--network-bridge=" + n.c.net.bridge,
		// containerd and runc manage cgroups, namespaces and mounts.
		"--capability=all",
		// runc gives each container a session keyring.
		"--system-call-filter=@keyring",
		// kubelet's OOM watcher reads the kernel log.
		"--bind-ro=/dev/kmsg",
		"--bind-ro=" + filepath.Join(assets, "kubelet") + ":/usr/local/bin/kubelet",
		"--bind-ro=" + filepath.Join(assets, "images") + ":/opt/kmaint-node/images",
	}
	for _, b := range n.c.cfg.NodeBinds {
		args = append(args, "--bind-ro="+b)
	}
	return args
}

// supervise boots the node and boots it again each time it asks to be
// rebooted, until it powers off or Stop.
func (n *Node) supervise() {
	defer close(n.done)
	for {
		n.mu.Lock()
		if n.stop {
			n.mu.Unlock()
			return
		}
		n.boots++
		boot := n.boots
		n.mu.Unlock()
		rc, err := n.boot(boot)
		n.mu.Lock()
		n.nspawn = nil
		stop := n.stop
		n.mu.Unlock()
		if err != nil {
			n.c.cfg.Log.Error("Node boot failed", "node", n.name, "boot", boot, "err", err)
		}
		if stop || rc != exitReboot {
			return
		}
		n.c.cfg.Log.Info("Node reboots", "node", n.name, "boot", boot, "exitStatus", rc)
		if !n.waitIfHeld() {
			return
		}
	}
}

// boot runs one boot of the node and returns nspawn's exit status.
func (n *Node) boot(boot int) (int, error) {
	console, err := os.Create(filepath.Join(n.dir, "logs", fmt.Sprintf("console.%d.log", boot)))
	if err != nil {
		return -1, err
	}
	defer console.Close()
	argv := n.cg.wrap(n.c.ns.enter(n.nspawnArgs()...)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = console, console
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	n.mu.Lock()
	if err := cmd.Start(); err != nil {
		n.mu.Unlock()
		return -1, err
	}
	n.nspawn = cmd
	n.mu.Unlock()
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

// leader is the pid of the node's PID 1 (systemd), as the host sees it:
// the child of the current boot's systemd-nspawn.
func (n *Node) leader() (int, error) {
	n.mu.Lock()
	cmd := n.nspawn
	n.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return 0, fmt.Errorf("node %s is not running", n.name)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("node %s: %w", n.name, err)
	}
	// While nspawn sets up, its outer child is a child too: PID 1 is the
	// one running systemd.
	for _, f := range strings.Fields(string(b)) {
		comm, err := os.ReadFile("/proc/" + f + "/comm")
		if err == nil && strings.TrimSpace(string(comm)) == "systemd" {
			return strconv.Atoi(f)
		}
	}
	return 0, fmt.Errorf("node %s is booting: no PID 1 yet", n.name)
}

// ExecOptions say how Exec runs a command.
type ExecOptions struct {
	// User runs the command as this user of the node (a name or a uid, with
	// the user's groups); empty is root.
	User string
	// Stdin is the command's standard input; nil is empty.
	Stdin io.Reader
}

// Exec runs argv inside the node as root, as a person on the host would
// with nsenter into every namespace of the node's PID 1, and returns its
// combined output.
func (n *Node) Exec(ctx context.Context, argv ...string) ([]byte, error) {
	return n.ExecWith(ctx, ExecOptions{}, argv...)
}

// ExecWith runs argv inside the node with opts, and returns its combined
// output. The command is in the cluster's cgroups, so nothing it leaves
// running outlives the cluster.
func (n *Node) ExecWith(ctx context.Context, opts ExecOptions, argv ...string) ([]byte, error) {
	pid, err := n.leader()
	if err != nil {
		return nil, err
	}
	full := []string{"nsenter", "--target", strconv.Itoa(pid), "--all", "--"}
	if opts.User != "" {
		// setpriv is the node's (nsenter entered its mount namespace), and so
		// is the user database it reads.
		full = append(full, "setpriv", "--reuid", opts.User, "--regid", opts.User, "--init-groups", "--reset-env", "--")
	}
	full = n.c.execs.wrap(append(full, argv...)...)
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Stdin = opts.Stdin
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("on node %s: %s: %w", n.name, strings.Join(argv, " "), err)
	}
	return out.Bytes(), nil
}

// BootID is the node's current boot ID, as the node sees it.
func (n *Node) BootID(ctx context.Context) (string, error) {
	out, err := n.Exec(ctx, "cat", "/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(out)), err
}

// ImportImage imports a docker-archive or OCI image tarball into the node's
// containerd, where kubelet finds it (namespace k8s.io). Nodes forget it
// when the cluster stops, not when they reboot.
func (n *Node) ImportImage(ctx context.Context, tarball io.Reader) error {
	out, err := n.ExecWith(ctx, ExecOptions{Stdin: tarball},
		"ctr", "--namespace", "k8s.io", "images", "import", "--snapshotter", "native", "--all-platforms", "-")
	if err != nil {
		return fmt.Errorf("import image: %w: %s", err, out)
	}
	return nil
}

// markStopped tells the node's supervisor not to boot it again, and
// returns the current boot's systemd-nspawn, if any.
func (n *Node) markStopped() *exec.Cmd {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.stop {
		n.stop = true
		close(n.stopping)
	}
	return n.nspawn
}

// shutdown powers the node off as a person would, through logind, so that
// kubelet's graceful node shutdown stops the pods first (nspawn's own
// SIGTERM handling powers off behind logind's back, and containers whose
// PID 1 ignores SIGTERM would then hold up the final kill). Where logind
// does not answer, SIGTERM to systemd-nspawn still powers off. It waits up
// to timeout.
func (n *Node) shutdown(timeout time.Duration) {
	cmd := n.markStopped()
	if cmd == nil || cmd.Process == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.Exec(ctx, "busctl", "call", "org.freedesktop.login1", "/org/freedesktop/login1",
		"org.freedesktop.login1.Manager", "PowerOff", "b", "false"); err != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-n.done:
	case <-time.After(timeout):
	}
}
