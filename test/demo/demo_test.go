package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/node"
	"github.com/kmaint/kmaint/test/promtest"
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
	reportPath := filepath.Join(t.TempDir(), "report.html")
	err := run(ctx, options{
		Nodes: 4, Pools: 2, RebootTime: 500 * time.Millisecond, Journal: sim.Memory,
		ExitWhenDone: true, KubeconfigOut: filepath.Join(t.TempDir(), "kubeconfig"), Bed: bed,
		ReportOut: reportPath,
	}, &out)
	t.Log("\n" + out.String())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ctx.Err()).NotTo(HaveOccurred(), "the demo ran out of time before every request was done")

	text := out.String()
	g.Expect(text).NotTo(ContainSubstring("\x1b"), "no escape codes when output is not a terminal")
	g.Expect(text).To(MatchRegexp(`(?m)^\s*\+\d+\.\ds\s+web-000\s+web\s+Rebooting\s+host\b`), "a line per change")
	g.Expect(text).NotTo(MatchRegexp(`(?m)^\s*\+\S+\s+\S+\s+\S+\s+Pending\s+(host|config)\b`),
		"a request raised on the node is Requested from the start: it never flaps back to Pending when kmaint records it")
	g.Expect(text).To(ContainSubstring("All 3 requests done: 3 Succeeded, 0 Failed."))
	// One node of the rollout is opted out: it waits, says why, and
	// reboots once lifted.
	g.Expect(text).To(ContainSubstring("opt-out kubectl annotate node batch-001 kmaint.io/do-not-disrupt="))
	g.Expect(text).To(MatchRegexp(`(?m)^\s*\+\d+\.\ds\s+batch-001\s+batch\s+Requested\s+config\b.*\(DoNotDisrupt\)$`))
	g.Expect(text).To(MatchRegexp(`(?m)^\s*\+\d+\.\ds\s+batch-001\s+batch\s+Rebooting\s+config\b`))
	// The rollout's hooks: a Job stages the config on each drained node,
	// and one checks it after the reboot, before the node is released.
	for _, n := range []string{"batch-000", "batch-001"} {
		g.Expect(text).To(MatchRegexp(`(?m)^\s*\+\d+\.\ds\s+` + n + `\s+batch\s+at hook stage-config \(beforeReboot\)$`))
		g.Expect(text).To(MatchRegexp(`(?m)^\s*\+\d+\.\ds\s+` + n + `\s+batch\s+at hook check-config \(afterReboot\)$`))
	}
	g.Expect(text).To(MatchRegexp(`(?m)^web\s+1\s+2\s+1\s+500ms$`), "web: 1 node rebooted, maxUnavailable 2, 1 wave")
	g.Expect(text).To(MatchRegexp(`(?m)^batch\s+2\s+1 \(50%\)\s+2\s+1s$`), "batch: 2 nodes rebooted, maxUnavailable 50% of 2, 2 waves")
	g.Expect(text).To(MatchRegexp(`makespan \d+\.\ds, ideal 1s, ratio \d+\.\d\d`))
	g.Expect(text).To(MatchRegexp(`waiting for admission\s+requested → draining\s+\S+\s+\S+`))
	g.Expect(text).To(MatchRegexp(`at hooks\s+beforeReboot\s+\S+\s+\S+`), "the stage Jobs' stretch")
	g.Expect(text).To(MatchRegexp(`at hooks\s+afterReboot\s+\S+\s+\S+`), "the check Jobs' stretch")

	// The report is written and its path printed; its content is
	// cmd/kubectl-kmaint/report's to test (down to a render in Chromium).
	g.Expect(text).To(ContainSubstring("Rollout report (timeline per node, unavailable against budget): file://" + reportPath))
	html, err := os.ReadFile(reportPath)
	g.Expect(err).NotTo(HaveOccurred())
	for _, node := range []string{"web-000", "batch-000", "batch-001"} {
		g.Expect(string(html)).To(ContainSubstring(`data-node="`+node+`"`), "a timeline row for %s", node)
	}
	g.Expect(string(html)).To(ContainSubstring(`[stage-config]`), "the report names the hooks of a stretch at them")
	g.Expect(string(html)).To(ContainSubstring(`class="bar k-after-reboot"`), "the report draws the stretches at hooks")

	var list v1alpha1.NodeMaintenanceList
	g.Expect(bed.Client.List(ctx, &list)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(3), "1 host and 2 config requests")
	for _, nm := range list.Items {
		g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), nm.Name)
		if nm.Spec.Source != v1alpha1.SourceConfig {
			g.Expect(nm.Status.HookTimes).To(BeEmpty(), "pool web has no hooks")
			continue
		}
		g.Expect(nm.Status.HookTimes).To(HaveLen(2), nm.Name)
		g.Expect(nm.Status.HookTimes[0].Point).To(Equal("beforeReboot"))
		g.Expect(nm.Status.HookTimes[0].Passed).NotTo(BeNil(), "%s: the stage Job passed before the reboot", nm.Name)
		g.Expect(nm.Status.HookTimes[0].Passed.After(nm.Status.PhaseTimes.Approved.Time)).To(BeFalse(), "%s: staged before the approval (times by the second)", nm.Name)
		g.Expect(nm.Status.HookTimes[1].Point).To(Equal("afterReboot"))
		g.Expect(nm.Status.HookTimes[1].Hooks).To(Equal([]string{"check-config"}))
	}
}

// TestDemoShowsTheRebootSentinelAndItsLoopGuard runs the demo with three
// nodes in pool web and two in batch: one host request, on the next web
// node the reboot sentinel, which reboots it once and, still there after the reboot, is
// held as a reboot loop.
func TestDemoShowsTheRebootSentinelAndItsLoopGuard(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// An API server of its own: the package's other demo has pools of
	// the same names on the shared one.
	own, err := testbed.Start()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(own.Stop()).To(Succeed()) }()
	var out bytes.Buffer
	err = run(ctx, options{
		Nodes: 5, Pools: 2, RebootTime: 500 * time.Millisecond, Journal: sim.Memory,
		ExitWhenDone: true, KubeconfigOut: filepath.Join(t.TempDir(), "kubeconfig"), Bed: own,
	}, &out)
	t.Log("\n" + out.String())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ctx.Err()).NotTo(HaveOccurred(), "the demo ran out of time before the sentinel's reboot loop was held")

	text := out.String()
	g.Expect(text).To(MatchRegexp(`(?m)^\s+host\s+kmaint-daemon request-reboot "kernel update" on web-000$`))
	g.Expect(text).To(ContainSubstring("sentinel  /var/run/reboot-required and its .pkgs (linux-image-6.1.0-18-amd64, libc6) appear on web-001"))
	g.Expect(text).To(MatchRegexp(`(?m)^\s*\+\d+\.\ds\s+web-001\s+web\s+Rebooting\s+sentinel\b`))
	g.Expect(text).To(MatchRegexp(`(?m)^\s*\+\d+\.\ds\s+web-001\s+web\s+reboot loop held \(event RebootLoop\): the reboot sentinel is unchanged since the reboot it asked for`))
	g.Expect(text).To(ContainSubstring("All 4 requests done: 4 Succeeded, 0 Failed."))

	var list v1alpha1.NodeMaintenanceList
	g.Expect(own.Client.List(ctx, &list)).To(Succeed())
	sentinel := 0
	for _, nm := range list.Items {
		if nm.Spec.Source == v1alpha1.SourceSentinel {
			sentinel++
			g.Expect(nm.Spec.NodeName).To(Equal("web-001"))
			g.Expect(nm.Spec.Reason).To(ContainSubstring("packages linux-image-6.1.0-18-amd64, libc6"))
			g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		}
	}
	g.Expect(sentinel).To(Equal(1), "one sentinel request: the one still there after its reboot is held")
}

// TestDemoRebootsFragmentedNodesInsideTheWindow runs the demo with its
// metric part, on an API server of its own: the one node no other request
// reboots fragments, the policy asks for it, and it is rebooted once the
// policy's window opens, with its fragmentation before and after. With
// the halt part, the rolled-out pool's first node comes back unhealthy:
// the view shows the pool halted with the node and the check, the series
// recovers, the demo resumes the pool as a person would, and the rollout
// completes.
func TestDemoRebootsFragmentedNodesInsideTheWindow(t *testing.T) {
	promtest.Binary(t) // skip (or fail on CI) without Prometheus
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, options{
		Nodes: 4, Pools: 2, RebootTime: 500 * time.Millisecond, Journal: sim.Memory, Metrics: true, Halt: true,
		ExitWhenDone: true, KubeconfigOut: filepath.Join(t.TempDir(), "kubeconfig"),
	}, &out)
	t.Log("\n" + out.String())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ctx.Err()).NotTo(HaveOccurred(), "the demo ran out of time before every request was done")

	text := out.String()
	g.Expect(text).To(ContainSubstring("fragmentation rises on web-001 (to 0.97)"))
	g.Expect(text).To(MatchRegexp(`(?m)^\s*\+\d+\.\ds\s+web-001\s+web\s+policy memory-fragmentation: pending`))
	g.Expect(text).To(MatchRegexp(`(?m)^\s*\+\d+\.\ds\s+web-001\s+web\s+Requested\s+metric\b.*\(OutsideWindow\)$`))
	g.Expect(text).To(MatchRegexp(`(?m)^\s*\+\S+\s+window of policy memory-fragmentation: open until`))
	g.Expect(text).To(ContainSubstring("All 4 requests done: 4 Succeeded, 0 Failed."))
	g.Expect(text).To(MatchRegexp(`(?m)^web\s+1\s+2\s+1\s+500ms$`), "web: 1 host reboot; the policy's is summarized on its own")
	g.Expect(text).To(MatchRegexp(`(?m)^\s+web-001\s+0\.9\d* → 0\.0\d*\s+\S+ UTC, inside the window\s+\S+ UTC$`))

	// The halt: batch-000 settles unhealthy, its pool halts and says why,
	// the demo resumes it, and batch-000 succeeds with the rest.
	g.Expect(text).To(ContainSubstring("halt      MaintenancePool batch: settleTime 3s, health check node-healthy `sim_node_unhealthy == 1` every 5s, resume Manual;"))
	g.Expect(text).To(MatchRegexp(`(?m)^\s*\+\d+\.\ds\s+batch-000\s+batch\s+Settling\s+config\b`))
	g.Expect(text).To(MatchRegexp(`(?m)^\s*\+\d+\.\ds\s+pool batch HALTED: batch-000 failed health check node-healthy \(value 1\): no node is admitted \(condition Halted, event PoolHalted\); resume: kubectl kmaint resume batch$`))
	g.Expect(text).To(MatchRegexp(`(?m)^\s*\+\d+\.\ds\s+pool batch resumed: kubectl kmaint resume batch wrote kmaint.io/resume-halt=\S+Z; the failed node gives up its slot$`))
	g.Expect(text).To(MatchRegexp(`(?m)^\s*\+\d+\.\ds\s+pool batch no longer halted: the rollout goes on$`))
	// The summary's ideal counts the pool's settle time in each wave and
	// the time it stood halted for a person: a healthy run is not
	// reported several times slower than it could be.
	g.Expect(text).To(MatchRegexp(`batch's waves last its settle time 3s more, and it stood halted [1-9]\S*s, waiting for a person`))
	halted := strings.Index(text, "pool batch HALTED")
	g.Expect(halted).To(BeNumerically("<", strings.Index(text, "pool batch resumed")))
	g.Expect(strings.Index(text, "pool batch resumed")).To(BeNumerically("<", strings.Index(text, "pool batch no longer halted")))
}
