package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/operator/api/v1alpha1"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/node"
	"github.com/kmaint/kmaint/test/sim"
	"github.com/kmaint/kmaint/test/testbed"
)

var bed *testbed.Bed

func TestMain(m *testing.M) {
	node.MaybeRunDaemon()
	os.Exit(harness.Main(m, &bed))
}

// TestDemoRunsEveryRequestThroughTheGateAndSummarizes runs the demo as CI
// would, output not a terminal, on a small cluster: one host request in the
// web pool and a config rollout of the batch pool.
func TestDemoRunsEveryRequestThroughTheGateAndSummarizes(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, options{
		Nodes: 4, Pools: 2, RebootTime: 500 * time.Millisecond, Journal: sim.Memory,
		ExitWhenDone: true, KubeconfigOut: filepath.Join(t.TempDir(), "kubeconfig"), Bed: bed,
	}, &out)
	t.Log("\n" + out.String())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ctx.Err()).NotTo(HaveOccurred(), "the demo ran out of time before every request was done")

	text := out.String()
	g.Expect(text).NotTo(ContainSubstring("\x1b"), "no escape codes when output is not a terminal")
	g.Expect(text).To(MatchRegexp(`(?m)^\s*\+\d+\.\ds\s+web-000\s+web\s+rebooting\s+host\b`), "a line per change")
	g.Expect(text).To(ContainSubstring("All 3 requests done: 3 Succeeded, 0 Failed."))
	g.Expect(text).To(MatchRegexp(`(?m)^web\s+1\s+2\s+1\s+500ms$`), "web: 1 node rebooted, maxUnavailable 2, 1 wave")
	g.Expect(text).To(MatchRegexp(`(?m)^batch\s+2\s+1 \(50%\)\s+2\s+1s$`), "batch: 2 nodes rebooted, maxUnavailable 50% of 2, 2 waves")
	g.Expect(text).To(MatchRegexp(`makespan \d+\.\ds, ideal 1s, ratio \d+\.\d\d`))
	g.Expect(text).To(MatchRegexp(`waiting for admission\s+requested → approved\s+\S+\s+\S+`))

	var list v1alpha1.NodeMaintenanceList
	g.Expect(bed.Client.List(ctx, &list)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(3), "1 host and 2 config requests")
	for _, nm := range list.Items {
		g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), nm.Name)
	}
}
