package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	_ "net/http/pprof" // served with KMAINT_BENCH_PPROF
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/test/bench/provenance"
	"github.com/kmaint/kmaint/test/bench/smoke"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/sim"
	"github.com/kmaint/kmaint/test/testbed"
)

var bed *testbed.Bed

// The users the operator and the simulated daemons reach the API server
// as, so that its audit log tells their requests apart.
const (
	operatorUser = "bench-operator"
	daemonUser   = "bench-daemon"
)

// auditLog is the API server's audit log of the operator's and the
// daemons' requests; empty when KMAINT_BENCH_AUDIT=off turns it off (to
// measure what it costs).
var auditLog string

func TestMain(m *testing.M) {
	// KMAINT_BENCH_PPROF=host:port serves this process's profiles: its
	// simulated kubelets and daemons, beside the operator's own.
	if addr := os.Getenv("KMAINT_BENCH_PPROF"); addr != "" {
		go func() { fmt.Fprintln(os.Stderr, http.ListenAndServe(addr, nil)) }()
	}
	var opts []testbed.Option
	if os.Getenv("KMAINT_BENCH_AUDIT") != "off" {
		dir, err := os.MkdirTemp("", "kmaint-bench-audit-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		auditLog = filepath.Join(dir, "audit.log")
		opts = append(opts, testbed.WithAuditLog(auditLog, operatorUser, daemonUser))
		code := harness.Main(m, &bed, opts...)
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(harness.Main(m, &bed))
}

// scenario is one rolling reboot: N nodes, maxUnavailable k, and r for a
// node's drain plus reboot.
type scenario struct {
	N, K int
	R    time.Duration
}

// scenarios are the issue's: 500 nodes at k=25, 2000 at k=100 and 5000
// at k=250; in a smoke run (make test's), 20 nodes at k=5 with r=2s.
// KMAINT_BENCH replaces them, e.g. "100:10:2s,500:25:10s".
func scenarios(b *testing.B) []scenario {
	spec := os.Getenv("KMAINT_BENCH")
	if spec == "" && smoke.On() {
		return []scenario{{20, 5, 2 * time.Second}}
	}
	if spec == "" {
		return []scenario{{500, 25, 10 * time.Second}, {2000, 100, 10 * time.Second}, {5000, 250, 10 * time.Second}}
	}
	var out []scenario
	for _, s := range strings.Split(spec, ",") {
		f := strings.Split(s, ":")
		if len(f) != 3 {
			b.Fatalf("KMAINT_BENCH entry %q: want N:k:r", s)
		}
		n, err1 := strconv.Atoi(f[0])
		k, err2 := strconv.Atoi(f[1])
		r, err3 := time.ParseDuration(f[2])
		if err1 != nil || err2 != nil || err3 != nil {
			b.Fatalf("KMAINT_BENCH entry %q: want N:k:r such as 500:25:10s", s)
		}
		out = append(out, scenario{n, k, r})
	}
	return out
}

// result is what one rollout measured; it is saved as JSON.
type result struct {
	Nodes               int     `json:"nodes"`
	MaxUnavailable      int     `json:"maxUnavailable"`
	RebootSeconds       float64 `json:"rebootSeconds"`
	MakespanSeconds     float64 `json:"makespanSeconds"`
	IdealSeconds        float64 `json:"idealSeconds"`
	MakespanOverIdeal   float64 `json:"makespanOverIdeal"`
	SlotToApprovalP50Ms float64 `json:"slotToApprovalP50Ms"`
	SlotToApprovalP99Ms float64 `json:"slotToApprovalP99Ms"`
	// SlotToAdmission is from a freed slot to the next node's admission:
	// the gate's own latency. SlotToApproval adds that node's drain, which
	// takes as long as its pods take to leave (Drain, admission to
	// approval). IdealWithDrains counts each wave as a drain (p50) plus r.
	SlotToAdmissionP50Ms float64 `json:"slotToAdmissionP50Ms"`
	SlotToAdmissionP99Ms float64 `json:"slotToAdmissionP99Ms"`
	DrainP50Ms           float64 `json:"drainP50Ms"`
	DrainP99Ms           float64 `json:"drainP99Ms"`
	// Reboot is from a node's approval to its completion: r, then the
	// daemon's start on the new boot and the gate's closing of the reboot.
	// Closing is the part of it from the node's return, Ready in a new
	// boot, to the completion.
	RebootP50Ms                 float64 `json:"rebootP50Ms"`
	RebootP99Ms                 float64 `json:"rebootP99Ms"`
	ClosingP50Ms                float64 `json:"closingP50Ms"`
	ClosingP99Ms                float64 `json:"closingP99Ms"`
	IdealWithDrainsSeconds      float64 `json:"idealWithDrainsSeconds"`
	MakespanOverIdealWithDrains float64 `json:"makespanOverIdealWithDrains"`
	RequestToAnnotP50Ms         float64 `json:"requestToAnnotationP50Ms"`
	RequestToAnnotP99Ms         float64 `json:"requestToAnnotationP99Ms"`
	// GateReconciles is how many reconciles the gate ran during the
	// rollout, and GateReconcileMeanMs how long one took on average: a
	// freed slot waits for the reconcile under way to end.
	GateReconciles      float64 `json:"gateReconciles"`
	GateReconcileMeanMs float64 `json:"gateReconcileMeanMs"`
	OperatorPeakRSSMiB  float64 `json:"operatorPeakRSSMiB"`
	OperatorCPUSeconds  float64 `json:"operatorCPUSeconds"`
	// APIServerCPUSeconds is the CPU kube-apiserver spent during the
	// rollout: what the operator's and daemons' requests cost it (and its
	// audit log, when on).
	APIServerCPUSeconds   float64 `json:"apiServerCPUSeconds"`
	OperatorRequestsPerRb float64 `json:"operatorRequestsPerReboot"`
	DaemonRequestsPerRb   float64 `json:"daemonRequestsPerReboot"`
	// OperatorRequests and DaemonRequests break the requests per reboot
	// down by "verb resource[/subresource]", as the API server's audit log
	// has them; absent when the audit log is off.
	OperatorRequests map[string]float64 `json:"operatorRequests,omitempty"`
	DaemonRequests   map[string]float64 `json:"daemonRequests,omitempty"`
	PeakUnavailable  int                `json:"peakUnavailable"`
	// Rebooted is how many nodes rebooted. Unfinished says the rollout
	// did not finish within the bench's limit (3 × ideal + 2 min): the
	// result is what was measured until then, its figures per reboot are
	// per node rebooted, and MakespanOverIdeal is a lower bound (the limit
	// over the ideal).
	Rebooted   int     `json:"rebooted"`
	Unfinished bool    `json:"unfinished,omitempty"`
	Machine    machine `json:"machine"`
	Date       string  `json:"date"`
	// Command made this result; Commit is the code's commit, "-dirty"
	// when the work tree differed from it, which Dirty says too: such a
	// result is kept only outside test/bench/results (resultsDir).
	Command string `json:"command"`
	Commit  string `json:"commit"`
	Dirty   bool   `json:"dirty,omitempty"`
}

func BenchmarkRollingReboot(b *testing.B) {
	commit, err := sourceCommit()
	if err != nil {
		b.Fatal(err)
	}
	dir := resultsDir(b, commit)
	operatorBin := harness.BuildOperator(b)
	daemonConfig := userConfig(b, daemonUser)
	for _, sc := range scenarios(b) {
		b.Run(fmt.Sprintf("N=%d/k=%d/r=%s", sc.N, sc.K, sc.R), func(b *testing.B) {
			// One rollout is one iteration; make bench runs one (-benchtime 1x).
			for i := range b.N {
				res := rollout(b, sc, operatorBin, daemonConfig, fmt.Sprintf("n%d-k%d-%d", sc.N, sc.K, i))
				res.Command, res.Commit, res.Dirty = benchCommand(), commit, provenance.Dirty(commit)
				b.ReportMetric(res.MakespanOverIdeal, "makespan/ideal")
				b.ReportMetric(res.SlotToApprovalP99Ms, "slot-to-approval-p99-ms")
				b.ReportMetric(res.SlotToAdmissionP99Ms, "slot-to-admission-p99-ms")
				b.ReportMetric(res.MakespanOverIdealWithDrains, "makespan/ideal-with-drains")
				b.ReportMetric(res.RequestToAnnotP99Ms, "request-to-annotation-p99-ms")
				b.ReportMetric(res.OperatorPeakRSSMiB, "operator-peak-RSS-MiB")
				b.ReportMetric(res.OperatorRequestsPerRb, "operator-requests/reboot")
				b.ReportMetric(res.DaemonRequestsPerRb, "daemon-requests/reboot")
				b.ReportMetric(float64(res.PeakUnavailable), "peak-unavailable")
				save(b, dir, res)
				if res.Unfinished {
					b.Errorf("rollout of %d nodes did not finish in %.0f s: %d rebooted; what was measured until then is saved, marked unfinished",
						sc.N, res.MakespanSeconds, res.Rebooted)
				}
				if res.PeakUnavailable > sc.K {
					b.Errorf("invariant 1 broken: %d nodes unavailable at once, maxUnavailable %d", res.PeakUnavailable, sc.K)
				}
			}
		})
	}
}

func rollout(b *testing.B, sc scenario, operatorBin string, daemonConfig *rest.Config, pool string) result {
	ctx := context.Background()
	var daemonRequests atomic.Int64
	b.StopTimer()
	cfg := sim.Config{
		Pools:   []sim.PoolSpec{{Name: pool, Nodes: sc.N, MaxUnavailable: intstr.FromInt(sc.K)}},
		Journal: sim.Memory,
		Timing:  sim.Timing{Reboot: sc.R, DaemonRebootTimeout: 10 * sc.R},
		// Errors only (the harness's level): what goes wrong shows, what
		// a simulated reboot cuts short does not (sim's quietAfterStop).
		Log:            ctrl.Log.WithName("sim"),
		DaemonRequests: &daemonRequests,
		DaemonConfig:   daemonConfig,
		// A year of history is written before the daemons start (see
		// sim.Config).
		DeferDaemons: true,
	}
	shape(&cfg)
	setupStart := time.Now()
	c, err := sim.Start(ctx, bed, cfg)
	if err != nil {
		b.Fatal(err)
	}
	// Whatever watches the nodes stops before they are deleted: the
	// operator, then the daemons, then the nodes and their objects go. The
	// other way round, thousands of watchers log thousands of errors about
	// vanished nodes.
	var op *operatorProcess
	defer func() {
		if op != nil {
			op.stop()
		}
		c.Stop()
		cleanupObjects(b, c)
		cleanup(b, pool)
	}()
	seedHistory(b, c, setupStart)
	if err := c.StartDaemons(); err != nil {
		b.Fatal(err)
	}
	waitForDaemons(b, pool, sc.N)

	// KMAINT_BENCH_KUBECONFIG=path writes an admin's kubeconfig of the
	// bench's API server there, to profile the server while the rollout
	// runs: kubectl --kubeconfig path get --raw '/debug/pprof/profile?seconds=30'.
	if path := os.Getenv("KMAINT_BENCH_KUBECONFIG"); path != "" {
		if err := bed.WriteKubeconfig(path, "bench-admin", "system:masters"); err != nil {
			b.Fatal(err)
		}
	}
	op, metricsURL := startOperator(b, operatorBin, retentionFlags()...)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	tl, err := watchTimeline(watchCtx, kubernetes.NewForConfigOrDie(bed.Config), pool, sc.N)
	if err != nil {
		b.Fatal(err)
	}
	gateBefore, gateSecondsBefore, err := reconcileTime(metricsURL, "gate")
	if err != nil {
		b.Fatal(err)
	}
	opBefore, err := clientRequests(metricsURL)
	if err != nil {
		b.Fatal(err)
	}
	daemonRequests.Store(0)
	auditFrom, err := auditLogSize()
	if err != nil {
		b.Fatal(err)
	}
	apiServerCPUBefore, err := childCPUSeconds("kube-apiserver")
	if err != nil {
		b.Fatal(err)
	}

	b.StartTimer()
	start := time.Now()
	requested := map[string]time.Time{}
	for _, n := range c.Nodes() {
		requested[n.Name()] = time.Now()
		if err := n.RequestReboot("bench rollout"); err != nil {
			b.Fatal(err)
		}
	}
	ideal := time.Duration(math.Ceil(float64(sc.N)/float64(sc.K))) * sc.R
	// A rollout the machine cannot serve in time still yields what was
	// measured until then, marked unfinished: how memory, requests and
	// latencies grow matters most at the sizes that do not finish.
	unfinished := false
	select {
	case <-tl.doneCh:
	case <-time.After(3*ideal + 2*time.Minute):
		unfinished = true
	}
	end := time.Now()
	makespan := end.Sub(start)
	rebooted, peakUnavailable := tl.completed()
	b.StopTimer()

	gateAfter, gateSecondsAfter, err := reconcileTime(metricsURL, "gate")
	if err != nil {
		b.Fatal(err)
	}
	opAfter, err := clientRequests(metricsURL)
	if err != nil {
		b.Fatal(err)
	}
	rss, cpu, err := processStats(op.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	apiServerCPU, err := childCPUSeconds("kube-apiserver")
	if err != nil {
		b.Fatal(err)
	}
	opByVerb, daemonByVerb, err := requestsByVerb(auditFrom, start, end, max(1, rebooted))
	if err != nil {
		b.Fatal(err)
	}
	logRequests(b, "operator", opByVerb)
	logRequests(b, "daemons", daemonByVerb)
	slot := tl.slotToApproval(sc.K)
	admission := tl.slotToAdmission(sc.K)
	drains := tl.drainTimes()
	reboots := tl.rebootTimes()
	closings := tl.closingTimes()
	waves := math.Ceil(float64(sc.N) / float64(sc.K))
	idealWithDrains := time.Duration(waves) * (sc.R + percentile(drains, 0.50))
	annot := tl.requestToAnnotation(requested)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return result{
		Nodes: sc.N, MaxUnavailable: sc.K, RebootSeconds: sc.R.Seconds(),
		MakespanSeconds: makespan.Seconds(), IdealSeconds: ideal.Seconds(), MakespanOverIdeal: makespan.Seconds() / ideal.Seconds(),
		SlotToApprovalP50Ms: ms(percentile(slot, 0.50)), SlotToApprovalP99Ms: ms(percentile(slot, 0.99)),
		SlotToAdmissionP50Ms: ms(percentile(admission, 0.50)), SlotToAdmissionP99Ms: ms(percentile(admission, 0.99)),
		DrainP50Ms: ms(percentile(drains, 0.50)), DrainP99Ms: ms(percentile(drains, 0.99)),
		RebootP50Ms: ms(percentile(reboots, 0.50)), RebootP99Ms: ms(percentile(reboots, 0.99)),
		ClosingP50Ms: ms(percentile(closings, 0.50)), ClosingP99Ms: ms(percentile(closings, 0.99)),
		IdealWithDrainsSeconds: idealWithDrains.Seconds(), MakespanOverIdealWithDrains: makespan.Seconds() / idealWithDrains.Seconds(),
		RequestToAnnotP50Ms: ms(percentile(annot, 0.50)), RequestToAnnotP99Ms: ms(percentile(annot, 0.99)),
		GateReconciles: gateAfter - gateBefore, GateReconcileMeanMs: 1000 * (gateSecondsAfter - gateSecondsBefore) / max(1, gateAfter-gateBefore),
		OperatorPeakRSSMiB: float64(rss) / (1 << 20), OperatorCPUSeconds: cpu,
		APIServerCPUSeconds:   apiServerCPU - apiServerCPUBefore,
		OperatorRequestsPerRb: (opAfter - opBefore) / float64(max(1, rebooted)),
		DaemonRequestsPerRb:   float64(daemonRequests.Load()) / float64(max(1, rebooted)),
		OperatorRequests:      opByVerb,
		DaemonRequests:        daemonByVerb,
		PeakUnavailable:       peakUnavailable,
		Rebooted:              rebooted,
		Unfinished:            unfinished,
		Machine:               describeMachine(),
		Date:                  time.Now().UTC().Format(time.RFC3339),
	}
}

// waitForDaemons waits until every daemon has read its journal and said so.
func waitForDaemons(b *testing.B, pool string, n int) {
	// Every 5 s, not faster: a list of 5000 realistic Nodes is some 100 MB
	// for the API server to send, while thousands of daemons start.
	up := 0
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		var nodes corev1.NodeList
		if err := bed.Client.List(ctx, &nodes, client.MatchingLabels{"pool": pool}); err != nil {
			return false, err
		}
		up = 0
		for _, node := range nodes.Items {
			if _, ok := node.Annotations[protocol.State]; ok {
				up++
			}
		}
		return up == n, nil
	})
	if err != nil {
		b.Fatalf("daemons of pool %s did not start: %d of %d up: %v", pool, up, n, err)
	}
}

type operatorProcess struct {
	cmd *exec.Cmd
	// pprof is where the operator serves its profiles, e.g.
	// go tool pprof http://ADDR/debug/pprof/heap while a rollout runs.
	pprof string
}

func (o operatorProcess) stop() {
	_ = o.cmd.Process.Signal(os.Interrupt)
	_ = o.cmd.Wait()
}

func startOperator(b *testing.B, bin string, flags ...string) (*operatorProcess, string) {
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := bed.WriteKubeconfig(kubeconfig, operatorUser, "system:masters"); err != nil {
		b.Fatal(err)
	}
	metrics, probes, pprof := harness.FreeAddr(b), harness.FreeAddr(b), harness.FreeAddr(b)
	args := []string{"--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + probes, "--pprof-bind-address=" + pprof, "--drain-poll-interval=200ms"}
	cmd := exec.Command(bin, append(args, flags...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	// The operator must not outlive a benchmark that is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logPath := filepath.Join(b.TempDir(), "operator.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	// readyz answers once the operator's caches are synced, and not
	// before: without a timeout, one that never syncs would hold the
	// benchmark for ever.
	probe := &http.Client{Timeout: 5 * time.Second}
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		resp, err := probe.Get("http://" + probes + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		b.Fatalf("operator not ready (its caches did not sync) within a minute: %v; the end of its log:\n%s", err, lastLines(logPath, 20))
	}
	b.Logf("operator profiles: http://%s/debug/pprof/", pprof)
	return &operatorProcess{cmd: cmd, pprof: pprof}, "http://" + metrics + "/metrics"
}

// lastLines returns the last n lines of the file at path, or why not.
func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// cleanup deletes the rollout's nodes, so the next scenario starts alone.
func cleanup(b *testing.B, pool string) {
	if err := bed.Client.DeleteAllOf(context.Background(), &corev1.Node{}, client.MatchingLabels{"pool": pool}); err != nil {
		b.Logf("delete nodes of pool %s: %v", pool, err)
	}
}

// resultsEnv names another directory for the results than
// test/bench/results.
const resultsEnv = "KMAINT_BENCH_RESULTS"

// resultsDir is where the results go: $KMAINT_BENCH_RESULTS; else, in a
// smoke run, a directory of the run's own, removed after it; else
// test/bench/results, which takes only a result of code that is in a
// commit: from a work tree that differs from its commit (commit, as
// sourceCommit says it), the benchmark refuses to start.
func resultsDir(b *testing.B, commit string) string {
	if dir := os.Getenv(resultsEnv); dir != "" {
		return dir
	}
	if smoke.On() {
		return b.TempDir()
	}
	if provenance.Dirty(commit) {
		b.Fatalf("the work tree differs from %s (git status): commit first, so that a result in test/bench/results says what a commit does (%s=DIR keeps it elsewhere)",
			strings.TrimSuffix(commit, "-dirty"), resultsEnv)
	}
	return filepath.Join(testbed.RepoRoot(), "test", "bench", "results")
}

// save writes the result to dir/rolling-N-k.json and logs it.
func save(b *testing.B, dir string, r result) {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("rolling-%d-%d.json", r.Nodes, r.MaxUnavailable))
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s\n%s", path, data)
}
