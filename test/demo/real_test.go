package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/test/realcluster"
)

// TestDemoOnARealCluster runs `make demo-cluster`'s demo as CI would, on
// three real nodes: root's request on node-1 in pool web and a config
// rollout of pool batch (node-3) really reboot them through kmaint, the
// view prints each change, the summary counts them with the wave time
// measured on the nodes, and the cluster is gone afterwards.
func TestDemoOnARealCluster(t *testing.T) {
	g := NewWithT(t)
	const name = "demo-test"
	realcluster.Require(t, realcluster.Config{Name: name})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var out bytes.Buffer
	dir := t.TempDir()
	err := runReal(ctx, options{
		Real: true, ClusterName: name, Nodes: 3, ExitWhenDone: true, Logs: realcluster.TestLogWriter(t),
		KubeconfigOut: filepath.Join(dir, "kubeconfig"), ReportOut: filepath.Join(dir, "report.html"),
	}, &out)
	t.Log("\n" + out.String())
	g.Expect(err).NotTo(HaveOccurred(), "the demo, its cluster's stop included")
	g.Expect(ctx.Err()).NotTo(HaveOccurred(), "the demo ran out of time before every request was done")

	text := out.String()
	g.Expect(text).To(MatchRegexp(`(?m)^\s*\+\d+\.\ds\s+node-1\s+web\s+Rebooting\s+host\b`), "node-1 reboots for root's request")
	g.Expect(text).To(MatchRegexp(`(?m)^\s*\+\d+\.\ds\s+node-3\s+batch\s+Rebooting\s+config\b`), "node-3 reboots for the rollout")
	g.Expect(text).NotTo(MatchRegexp(`node-2\s+web\s+Rebooting`), "node-2 was asked for nothing")
	g.Expect(text).To(ContainSubstring("All 2 requests done: 2 Succeeded, 0 Failed."))
	g.Expect(text).To(MatchRegexp(`(?m)^web\s+1\s+1\s+1\s+\d+s$`), "web: 1 node rebooted, maxUnavailable 1, 1 wave")
	g.Expect(text).To(MatchRegexp(`(?m)^batch\s+1\s+1\s+1\s+\d+s$`), "batch: 1 node rebooted, maxUnavailable 1, 1 wave")
	g.Expect(text).To(ContainSubstring("the median drain and reboot measured here"))
	g.Expect(filepath.Join(dir, "report.html")).To(BeAnExistingFile())
	_, err = os.Stat(filepath.Join(dir, "kubeconfig"))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "the kubeconfig of a stopped cluster is removed")
}
