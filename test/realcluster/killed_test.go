package realcluster_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/test/realcluster"
)

// childEnv makes the test binary the child of TestKilledRunIsCleanedUp: it
// starts a cluster, says so in the file the variable names, and waits to
// be killed.
const childEnv = "REALCLUSTER_TEST_CHILD_READY_FILE"

const killedName = "realcluster-killed"

// TestKilledRunIsCleanedUp kills a test process (SIGKILL: no deferred Stop,
// no t.Cleanup) while its cluster runs, and shows that Cleanup, which every
// Start runs first and `make realcluster-clean` runs, removes all of it.
func TestKilledRunIsCleanedUp(t *testing.T) {
	if ready := os.Getenv(childEnv); ready != "" {
		runChild(t, ready)
		return
	}
	g := NewWithT(t)
	// The child may first wait its turn for the machine's cluster lock
	// while another package's cluster runs (several minutes), then start.
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	realcluster.Require(t, realcluster.Config{Name: killedName, Nodes: 1})
	ready := filepath.Join(t.TempDir(), "ready")
	child := exec.Command(os.Args[0], "-test.run", "^TestKilledRunIsCleanedUp$", "-test.v")
	child.Env = append(os.Environ(), childEnv+"="+ready)
	logFile, err := os.Create(filepath.Join(t.TempDir(), "child.log"))
	g.Expect(err).NotTo(HaveOccurred())
	defer logFile.Close()
	child.Stdout, child.Stderr = logFile, logFile
	g.Expect(child.Start()).To(Succeed())
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	t.Cleanup(func() {
		_ = child.Process.Kill()
		if err := realcluster.Cleanup(context.Background(), killedName, ""); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	g.Eventually(func(g Gomega) {
		select {
		case err := <-exited:
			log, _ := os.ReadFile(logFile.Name())
			StopTrying("the child exited before its cluster was ready").Wrap(err).Attach("log", string(log)).Now()
		default:
		}
		_, err := os.Stat(ready)
		g.Expect(err).NotTo(HaveOccurred())
	}).WithContext(ctx).WithTimeout(20 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

	g.Expect(child.Process.Signal(syscall.SIGKILL)).To(Succeed())
	<-exited
	left, err := realcluster.Remains(killedName, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(left).To(ContainElement(MatchRegexp(`^cgroup .* with [1-9][0-9]* processes$`)), "the killed run left its cluster running")
	t.Logf("left by the killed run:\n%s", strings.Join(left, "\n"))

	began := time.Now()
	g.Expect(realcluster.Cleanup(ctx, killedName, "")).To(Succeed())
	t.Logf("cleaned up in %s", time.Since(began).Round(time.Millisecond))
	left, err = realcluster.Remains(killedName, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(left).To(BeEmpty())
}

// runChild starts a one-node cluster and blocks until killed.
func runChild(t *testing.T, ready string) {
	ctx := context.Background()
	if _, err := realcluster.Start(ctx, realcluster.Config{Name: killedName, Nodes: 1,
		Log: realcluster.TestLog(t)}); err != nil {
		t.Fatalf("start: %v", err)
	}
	if err := os.WriteFile(ready, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {} // until the parent kills this process
}
