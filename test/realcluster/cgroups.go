package realcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// hierarchy is one mounted cgroup hierarchy and where this process sits in
// it.
type hierarchy struct {
	// mount is where the hierarchy is mounted, e.g. /sys/fs/cgroup/memory.
	mount string
	// self is this process's cgroup in it, e.g. /process_api/abc.
	self string
	// unified is true for the cgroup v2 hierarchy.
	unified bool
	// cpuset is true for the v1 cpuset controller, whose new cgroups hold
	// no CPUs until given some.
	cpuset bool
}

// hierarchies lists every cgroup hierarchy mounted here, with this
// process's place in it. A cluster's cgroups go below that place, so that
// whatever accounts for this process (a CI runner's memory cgroup) also
// accounts for the cluster.
func hierarchies() ([]hierarchy, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var hs []hierarchy
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		key := parts[1]
		if parts[0] == "0" && key == "" {
			key = "cgroup2"
		}
		mount, ok := mounts[key]
		if !ok {
			continue // a hierarchy that is not mounted here
		}
		hs = append(hs, hierarchy{mount: mount, self: parts[2], unified: key == "cgroup2", cpuset: key == "cpuset"})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(hs) == 0 {
		return nil, errors.New("no cgroup hierarchy mounted")
	}
	return hs, nil
}

// cgroupMounts maps each hierarchy's controller list (as /proc/self/cgroup
// names it, "cpu,cpuacct" or "name=systemd"; "cgroup2" for v2) to its mount
// point.
func cgroupMounts() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 {
			continue
		}
		switch tail[0] {
		case "cgroup2":
			m["cgroup2"] = fields[4]
		case "cgroup":
			var ctrls []string
			for _, o := range strings.Split(tail[2], ",") {
				switch {
				case o == "rw" || o == "ro" || strings.HasPrefix(o, "release_agent=") || o == "clone_children" || o == "noprefix" || o == "xattr":
				default:
					ctrls = append(ctrls, o)
				}
			}
			m[strings.Join(ctrls, ",")] = fields[4]
		}
	}
	return m, nil
}

// cgroupSet is one cgroup in every hierarchy: the directories of a
// cluster's part (its control plane, a node).
type cgroupSet struct {
	dirs   []string
	killer string // the cgroup v2 directory, whose cgroup.kill kills every process below
}

// newCgroupSet creates the cgroup rel (e.g. "kmaint-realcluster-x/node-1")
// below this process's cgroup in every hierarchy.
func newCgroupSet(hs []hierarchy, rel string) (*cgroupSet, error) {
	s := &cgroupSet{}
	for _, h := range hs {
		dir := filepath.Join(h.mount, h.self, rel)
		if h.cpuset {
			if err := mkdirCpuset(filepath.Join(h.mount, h.self), rel); err != nil {
				return nil, err
			}
		} else if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		s.dirs = append(s.dirs, dir)
		if h.unified {
			s.killer = dir
		}
	}
	return s, nil
}

// mkdirCpuset creates each level of rel below base, giving every new
// cgroup its parent's CPUs and memory nodes: a cpuset cgroup without them
// takes no process.
func mkdirCpuset(base, rel string) error {
	dir := base
	for _, part := range strings.Split(rel, "/") {
		parent := dir
		dir = filepath.Join(dir, part)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			v, err := os.ReadFile(filepath.Join(parent, f))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
				return fmt.Errorf("set %s of %s: %w", f, dir, err)
			}
		}
	}
	return nil
}

// joinScript is a shell prefix that moves the shell into the cgroup
// directories given before "--", then runs the rest: processes started
// through it are in the set before they run a single instruction of their
// own, and so is everything they start.
const joinScript = `while [ "$1" != -- ]; do echo $$ >"$1/cgroup.procs" || exit 125; shift; done; shift; exec "$@"`

// wrap returns argv run inside the set.
func (s *cgroupSet) wrap(argv ...string) []string {
	out := append([]string{"/bin/sh", "-c", joinScript, "sh"}, s.dirs...)
	out = append(out, "--")
	return append(out, argv...)
}

// killAndRemove kills every process in the cgroups rooted at dirs (and
// below), waits for them to be gone, and removes the cgroups.
func killAndRemove(ctx context.Context, dirs []string) error {
	// runc freezes a container's cgroup v1 freezer while it signals or
	// updates it; a node's runtime killed in that moment leaves the
	// container frozen, and a frozen process does not die of SIGKILL (it
	// sleeps in the freezer) until thawed.
	for _, d := range dirs {
		if err := thawTree(d); err != nil {
			return err
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "cgroup.kill")); err == nil {
			if err := os.WriteFile(filepath.Join(d, "cgroup.kill"), []byte("1"), 0o644); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("kill cgroup %s: %w", d, err)
			}
		}
	}
	// A v1-only process (none should be, but a leftover of an older layout
	// could) is killed by pid.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		left := 0
		for _, d := range dirs {
			for _, pid := range cgroupPids(d) {
				left++
				if p, err := os.FindProcess(pid); err == nil {
					_ = p.Kill()
				}
			}
		}
		return left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("processes left in cgroups %v: %w", dirs, err)
	}
	var errs []error
	for _, d := range dirs {
		if err := removeTree(ctx, d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// thawTree thaws every cgroup v1 freezer cgroup at or below dir; it does
// nothing in other hierarchies.
func thawTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		state := filepath.Join(p, "freezer.state")
		if b, err := os.ReadFile(state); err != nil || strings.TrimSpace(string(b)) == "THAWED" {
			return nil
		}
		if err := os.WriteFile(state, []byte("THAWED"), 0o644); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("thaw cgroup %s: %w", p, err)
		}
		return nil
	})
}

// cgroupPids lists the processes in dir and every cgroup below it.
func cgroupPids(dir string) []int {
	var pids []int
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(b)) {
			var pid int
			if _, err := fmt.Sscan(f, &pid); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// removeTree removes a cgroup and every cgroup below it, deepest first. A
// cgroup whose last process just died can be busy for a moment.
func removeTree(ctx context.Context, dir string) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		var dirs []string
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) {
			return true, nil
		}
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = os.Remove(dirs[i])
		}
		_, err = os.Stat(dir)
		return errors.Is(err, fs.ErrNotExist), nil
	})
}
