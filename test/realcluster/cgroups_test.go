package realcluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/test/harness"
)

// TestKillAndRemoveThawsAFrozenContainer: a node's container runtime
// killed while runc had a container's freezer cgroup frozen leaves that
// container's processes frozen, and SIGKILL does not end a frozen process.
// The cluster's stop still ends them and removes their cgroups.
func TestKillAndRemoveThawsAFrozenContainer(t *testing.T) {
	harness.RequireRoot(t)
	g := NewWithT(t)
	hs, err := hierarchies()
	g.Expect(err).NotTo(HaveOccurred())
	mounts, err := cgroupMounts()
	g.Expect(err).NotTo(HaveOccurred())
	var freezer *hierarchy
	for i, h := range hs {
		if h.mount == mounts["freezer"] {
			freezer = &hs[i]
		}
	}
	if freezer == nil {
		// The real cluster's kubelets run on cgroup v1 (failCgroupV1: false in
		// hack/node-rootfs/etc/kubernetes/kubelet.yaml), so a
		// machine that runs them has the freezer: CI must run this test.
		if os.Getenv("CI") != "" {
			t.Fatal("no cgroup v1 freezer hierarchy mounted; the real-cluster tests need cgroup v1 hierarchies")
		}
		t.Skip("no cgroup v1 freezer hierarchy on this machine: a frozen container cannot happen here")
	}
	root := filepath.Join(freezer.mount, freezer.self, "kmaint-realcluster-frozen-test")
	container := filepath.Join(root, "node-1", "container")
	g.Expect(os.MkdirAll(container, 0o755)).To(Succeed())
	t.Cleanup(func() { _ = thawTree(root); _ = removeTree(context.Background(), root) })

	set := &cgroupSet{dirs: []string{container}}
	argv := set.wrap("sleep", "600")
	cmd := exec.Command(argv[0], argv[1:]...)
	g.Expect(cmd.Start()).To(Succeed())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	g.Eventually(func() []int { return cgroupPids(container) }, 10*time.Second).Should(ConsistOf(cmd.Process.Pid))

	state := filepath.Join(container, "freezer.state")
	g.Expect(os.WriteFile(state, []byte("FROZEN"), 0o644)).To(Succeed())
	g.Eventually(func() string {
		b, _ := os.ReadFile(state)
		return strings.TrimSpace(string(b))
	}, 10*time.Second).Should(Equal("FROZEN"))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g.Expect(killAndRemove(ctx, []string{root})).To(Succeed())
	g.Eventually(exited, 10*time.Second).Should(BeClosed())
	g.Expect(root).NotTo(BeADirectory())
}
