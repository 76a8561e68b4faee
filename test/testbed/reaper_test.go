package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

const crashEnv = "KMAINT_TESTBED_CRASH"

// TestATestThatPanicsLeavesNoControlPlane runs itself again as a test
// binary that starts two control planes (a package's and a test's own, as
// some packages have) and panics, as a broken test does: no deferred Stop
// runs, yet no kube-apiserver or etcd outlives it.
func TestATestThatPanicsLeavesNoControlPlane(t *testing.T) {
	if os.Getenv(crashEnv) == "1" {
		for range 2 {
			b, err := Start()
			if err != nil {
				t.Fatal(err)
			}
			fmt.Printf("control plane %v\n", b.reaper.pids)
		}
		panic("a test panics with its control plane running")
	}
	g := NewWithT(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestATestThatPanicsLeavesNoControlPlane$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"=1")
	out, err := cmd.CombinedOutput()
	g.Expect(err).To(HaveOccurred(), "the test binary panics:\n%s", out)
	g.Expect(string(out)).To(ContainSubstring("a test panics with its control plane running"))
	var pids []int
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "control plane ["); ok {
			for _, f := range strings.Fields(strings.TrimSuffix(rest, "]")) {
				pid, err := strconv.Atoi(f)
				g.Expect(err).NotTo(HaveOccurred())
				pids = append(pids, pid)
			}
		}
	}
	g.Expect(pids).To(HaveLen(4), "the crashing binary names the kube-apiserver and etcd of each control plane:\n%s", out)
	g.Expect(pids).To(HaveEach(BeNumerically(">", 0)))
	seen := map[int]bool{}
	for _, pid := range pids {
		g.Expect(seen).NotTo(HaveKey(pid), "each reaper watches its own control plane: %v", pids)
		seen[pid] = true
	}
	for _, pid := range pids {
		g.Eventually(func() bool { return running(pid) }, time.Minute).Should(BeFalse(), "process %d outlived its test binary", pid)
	}
}

// running reports whether pid is a live process (a zombie is not).
func running(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(stat)
	closing := strings.LastIndexByte(s, ')')
	return closing < 0 || len(s) < closing+3 || s[closing+2] != 'Z'
}
