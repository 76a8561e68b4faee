// Package provenance says where a benchmark's result comes from: the
// commit of the code it measured and the machine it ran on, which every
// result under test/bench/results records.
package provenance

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// Commit is the commit of the checkout at root, with "-dirty" when the work
// tree differs from it. Results themselves are left out of the comparison:
// writing one must not make the next "dirty".
func Commit(root string) (string, error) {
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse HEAD: %w", err)
	}
	status, err := exec.Command("git", "-C", root, "status", "--porcelain", "--", ".", ":(exclude)test/bench/results").Output()
	if err != nil {
		return "", fmt.Errorf("git status: %w", err)
	}
	commit := strings.TrimSpace(string(head))
	if len(strings.TrimSpace(string(status))) > 0 {
		commit += "-dirty"
	}
	return commit, nil
}

// Dirty reports whether commit, as Commit returns it, says the work tree
// differed from the commit: what ran is in no commit, and cannot be made
// again.
func Dirty(commit string) bool { return strings.HasSuffix(commit, "-dirty") }

// Machine describes where a benchmark ran.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	MemoryGiB int64  `json:"memoryGiB"`
	Kernel    string `json:"kernel"`
	Go        string `json:"go"`
}

// ThisMachine describes the machine this runs on.
func ThisMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				m.CPU = strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb)
		m.MemoryGiB = (kb + 512*1024) / 1024 / 1024
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}
