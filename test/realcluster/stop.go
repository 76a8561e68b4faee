package realcluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// nodeShutdownTimeout bounds a node's orderly poweroff at Stop; kubelet's
// graceful node shutdown alone may take its shutdownGracePeriod (20s).
const nodeShutdownTimeout = 60 * time.Second

// KeepState makes Stop keep the state directory (logs, the nodes' journals)
// for a look after a failure; the next Start empties it.
func (c *Cluster) KeepState() { c.cfg.keepState = true }

// StateDir is the cluster's directory on the host.
func (c *Cluster) StateDir() string { return c.cfg.StateDir }

// Stop powers the nodes off, stops the control plane, then kills whatever
// is left in the cluster's cgroups and removes them; the namespaces, and
// with them every mount and link of the cluster, go with the last process.
// It removes the state directory unless KeepState was called.
func (c *Cluster) Stop(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Go(func() { n.shutdown(nodeShutdownTimeout) })
	}
	wg.Wait()
	return c.tearDown(ctx)
}

// Kill ends the cluster as Stop does, but without the nodes' orderly
// poweroff: what they run is killed with their cgroups, as a killed run's
// is (TestKilledRunIsCleanedUp). It is for a cluster whose end nobody
// watches, a test's cleanup: a node's orderly poweroff waits for its
// kubelet's graceful shutdown, up to its shutdownGracePeriod (20 s) while
// pods run. Like Stop, it fails if anything of the cluster is left.
func (c *Cluster) Kill(ctx context.Context) error {
	for _, n := range c.nodes {
		n.markStopped()
	}
	return c.tearDown(ctx)
}

// tearDown stops the control plane and removes everything of the cluster
// once its nodes are stopped or stopping.
func (c *Cluster) tearDown(ctx context.Context) error {
	for i := len(c.processes) - 1; i >= 0; i-- {
		c.processes[i].stop(15 * time.Second)
	}
	errs := []error{c.closeExposed()}
	if c.proxy != nil {
		errs = append(errs, c.proxy.close())
	}
	if c.dial != nil {
		c.dial.close()
	}
	if c.root != nil {
		errs = append(errs, killAndRemove(ctx, c.root.dirs))
	}
	if !c.cfg.keepState && c.cfg.StateDir != "" {
		errs = append(errs, removeStateDir(c.cfg.StateDir))
	}
	if left := c.Leftovers(); len(left) > 0 {
		errs = append(errs, fmt.Errorf("left after stop: %s", strings.Join(left, "; ")))
	}
	if c.lock != nil {
		errs = append(errs, c.lock.Close())
		c.lock = nil
	}
	return errors.Join(errs...)
}

// Leftovers describes what of the cluster is still there: a process in its
// network namespace, a cgroup, a mount under its state directory, a veth of
// one of its nodes in the host's namespace. Empty after Stop.
func (c *Cluster) Leftovers() []string {
	var left []string
	if c.nsInode != 0 {
		for _, pid := range processesInNetns(c.nsInode) {
			left = append(left, fmt.Sprintf("process %d in the cluster's network namespace", pid))
		}
	}
	if c.root != nil {
		for _, d := range c.root.dirs {
			if _, err := os.Stat(d); err == nil {
				left = append(left, "cgroup "+d)
			}
		}
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) > 4 && strings.HasPrefix(f[4], c.cfg.StateDir) {
				left = append(left, "mount "+f[4])
			}
		}
	}
	if ifs, err := net.Interfaces(); err == nil {
		for _, i := range ifs {
			if strings.HasPrefix(i.Name, "vb-") || i.Name == c.net.bridge {
				left = append(left, "link "+i.Name+" in the host's network namespace")
			}
		}
	}
	return left
}

// processesInNetns lists the processes whose network namespace has inode.
func processesInNetns(inode uint64) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st) == nil && st.Ino == inode {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Cleanup removes what a cluster of this name left when its run was
// killed: it kills every process in the cluster's cgroups (those the state
// directory lists, and those below this process's cgroups), removes the
// cgroups, and removes the state directory (default for the name when
// empty). The cluster's mounts and links were in namespaces that die with
// its processes.
func Cleanup(ctx context.Context, name, stateDir string) error {
	if err := checkName(name); err != nil {
		return err
	}
	stateDir = defaultStateDir(name, stateDir)
	dirs, err := cgroupsOf(name, stateDir)
	if err != nil {
		return err
	}
	if len(dirs) > 0 {
		if err := killAndRemove(ctx, dirs); err != nil {
			return err
		}
	}
	return removeStateDir(stateDir)
}

// removeStateDir removes the state directory, and its parent when that is
// the default one and no other cluster's is in it.
func removeStateDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if parent := filepath.Dir(dir); parent == stateRoot {
		_ = os.Remove(parent) // fails while another cluster's is there
	}
	return nil
}

// Remains describes what is left of a cluster of this name, running or
// killed: its cgroups with the number of processes in each, and its state
// directory. Empty after Cleanup.
func Remains(name, stateDir string) ([]string, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	stateDir = defaultStateDir(name, stateDir)
	dirs, err := cgroupsOf(name, stateDir)
	if err != nil {
		return nil, err
	}
	var left []string
	for _, d := range dirs {
		left = append(left, fmt.Sprintf("cgroup %s with %d processes", d, len(cgroupPids(d))))
	}
	if _, err := os.Stat(stateDir); err == nil {
		left = append(left, "state directory "+stateDir)
	}
	return left, nil
}

func defaultStateDir(name, stateDir string) string {
	if stateDir == "" {
		return filepath.Join(stateRoot, name)
	}
	return stateDir
}

// cgroupsOf lists the existing cgroups of the cluster: those its state
// directory lists (made by a run in other cgroups than this one), and
// those below this process's cgroups.
func cgroupsOf(name, stateDir string) ([]string, error) {
	var dirs []string
	if b, err := os.ReadFile(filepath.Join(stateDir, cgroupsFile)); err == nil {
		for _, d := range strings.Fields(string(b)) {
			if filepath.Base(d) == cgroupName(name) {
				dirs = append(dirs, d)
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	hs, err := hierarchies()
	if err != nil {
		return nil, err
	}
	for _, h := range hs {
		dirs = append(dirs, filepath.Join(h.mount, h.self, cgroupName(name)))
	}
	seen := map[string]bool{}
	var existing []string
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil && !seen[d] {
			seen[d] = true
			existing = append(existing, d)
		}
	}
	return existing, nil
}
