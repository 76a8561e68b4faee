package testbed

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// reaperScript kills the processes named by its arguments unless it reads
// "disarm" first. Its stdin is a pipe only the test binary writes to: when
// the binary ends without disarming it (a panic in a test, a test timeout,
// a SIGKILL), the pipe closes and the control plane goes with it. It
// ignores the signals a terminal sends its whole process group, so that a
// ^C does not take it before it has done its work.
const reaperScript = `trap "" INT TERM HUP
read -r word
[ "$word" = disarm ] || kill -KILL "$@" 2>/dev/null
exit 0`

// reaper stops the control plane of a test binary that ends without
// stopping it. Deferred calls do not run when a test panics: its
// kube-apiserver and etcd would outlive it and load the machine for every
// run after.
type reaper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// pids are the processes it kills.
	pids []int
}

// startReaper starts a reaper of this process's children named names
// (kube-apiserver, etcd).
func startReaper(names ...string) (*reaper, error) {
	var pids []int
	for _, name := range names {
		pid, err := ChildNamed(name)
		if err != nil {
			return nil, err
		}
		pids = append(pids, pid)
	}
	args := []string{"-c", reaperScript, "kmaint-testbed-reaper"}
	for _, pid := range pids {
		args = append(args, strconv.Itoa(pid))
	}
	cmd := exec.Command("/bin/sh", args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("reaper: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start reaper: %w", err)
	}
	return &reaper{cmd: cmd, stdin: stdin, pids: pids}, nil
}

// disarm tells the reaper the control plane was stopped, and waits for it.
func (r *reaper) disarm() error {
	_, werr := io.WriteString(r.stdin, "disarm\n")
	return errors.Join(werr, r.stdin.Close(), r.cmd.Wait())
}

// ChildNamed returns the pid of this process's newest child whose command
// is name (kube-apiserver, etcd): a test binary may run a second control
// plane beside its package's, and the one Start just started is the newest.
func ChildNamed(name string) (int, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, err
	}
	self := strconv.Itoa(os.Getpid())
	pid, newest := 0, uint64(0)
	for _, dir := range dirs {
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		s := string(stat)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open || s[open+1:closing] != name {
			continue
		}
		// After the name: the state, the parent's pid, and at the 20th
		// place (the 22nd field of stat) when the process started.
		rest := strings.Fields(s[closing+2:])
		if len(rest) < 20 || rest[1] != self {
			continue
		}
		started, err := strconv.ParseUint(rest[19], 10, 64)
		if err != nil {
			continue
		}
		if p, err := strconv.Atoi(filepath.Base(dir)); err == nil && (pid == 0 || started >= newest) {
			pid, newest = p, started
		}
	}
	if pid == 0 {
		return 0, fmt.Errorf("no child process %s of process %s", name, self)
	}
	return pid, nil
}
