package node_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/node"
)

// racyEnv makes this test binary, run again as a node's daemon, race two
// goroutines and end.
const racyEnv = "KMAINT_TEST_NODE_RACY"

func TestMain(m *testing.M) {
	if os.Getenv(racyEnv) != "" {
		os.Exit(racy())
	}
	os.Exit(m.Run())
}

// racy writes one variable from two goroutines, unordered.
func racy() int {
	x := 0
	done := make(chan struct{})
	go func() {
		x++
		close(done)
	}()
	x++
	<-done
	fmt.Println("racy:", x)
	return 0
}

// TestRaceInANodesDaemonIsReported: a daemon the node runs, built with -race
// as the test binary is under make test, reports a data race where
// RaceReports finds it (harness.StartNode fails the test on it), not only to
// the node's log.
func TestRaceInANodesDaemonIsReported(t *testing.T) {
	harness.RequireRoot(t)
	if !raceBuild {
		// make test builds this package with -race (the Makefile's
		// TEST_RACE): there a build without it is a mistake, not a skip.
		if os.Getenv("KMAINT_MAKE_TEST") != "" {
			t.Fatal("make test ran test/node without -race: the Makefile's TEST_RACE must name ./test/node")
		}
		t.Skip("the race detector reports only in a build with -race (make test builds this package with it)")
	}
	g := NewWithT(t)
	self, err := os.Executable()
	g.Expect(err).NotTo(HaveOccurred())
	n, err := node.Start(context.Background(), node.Config{Name: "racy", Dir: t.TempDir(), Daemon: []string{self},
		Env: []string{racyEnv + "=1"}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(n.Stop)
	g.Eventually(n.RaceReports, 10*time.Second).Should(ContainSubstring("WARNING: DATA RACE"))
}

// TestRaceFreeDaemonReportsNothing: a daemon without a race leaves no report.
func TestRaceFreeDaemonReportsNothing(t *testing.T) {
	harness.RequireRoot(t)
	g := NewWithT(t)
	n, err := node.Start(context.Background(), node.Config{Name: "calm", Dir: t.TempDir(), Daemon: []string{"true"}})
	g.Expect(err).NotTo(HaveOccurred())
	n.Stop()
	g.Expect(n.RaceReports()).To(BeEmpty())
}
