package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/bench/smoke"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	nodeshape "github.com/kmaint/kmaint/test/shape"
)

// paddedPool labels the padded benchmark's nodes.
const paddedPool = "padded"

// BenchmarkPaddedNodes measures the operator's memory when whoever may
// patch Nodes padded every Node with 240 KiB (issue 60). Under a key of
// kmaint.io/ that is not the protocol's ("pad=240KiB"), the operator's
// cache kept each whole: some 470 MiB at 2000 nodes against the
// deployment's 512 MiB limit, and the operator was killed at every start.
// Admission now refuses such a key, but a Node may carry one from before,
// and the cache must not hold it either way. Under a key of their own,
// which admission lets through ("pad=240KiB-elsewhere/rollout"), the cache
// drops it, but the API server answers each of the operator's writes with
// the whole Node: a pool given a new desiredConfig has every node written
// in one pass of the gate, which kept each answer to the pass's end. The
// nodes are realistic (shape.RealisticNode), their pad written by a
// cluster admin; "unpadded" is the same cluster without it.
//
// The operator runs as its own process with the deployment's GOMEMLIMIT
// (512 MiB), started once every Node is there. Once its caches synced and
// the gate has looked at the nodes (and, for the rollout, written each
// one's desired-config), it reports the operator's heap after a GC (its
// pprof endpoint's, ?gc=1), its resident memory and its peak resident
// memory (VmHWM: the list that filled its caches, and the rollout's pass,
// included). KMAINT_BENCH_PADDED_NODES sets the node count (2000; 20 in a
// smoke run, make test's).
func BenchmarkPaddedNodes(b *testing.B) {
	nodes := 2000
	if smoke.On() {
		nodes = 20
	}
	if s := os.Getenv("KMAINT_BENCH_PADDED_NODES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("KMAINT_BENCH_PADDED_NODES=%q: %v", s, err)
		}
		nodes = n
	}
	operatorBin := harness.BuildOperator(b)
	for _, c := range []paddedCase{
		{name: "unpadded"},
		{name: "pad=240KiB", key: "kmaint.io/pad", pad: 240 << 10},
		// A key of anyone's own is theirs to write: the cache drops it, and
		// the rollout (every node's desired-config written in one pass)
		// must not hold what the writes' answers carry of it.
		{name: "pad=240KiB-elsewhere/rollout", key: "example.com/pad", pad: 240 << 10, rollout: true},
		// A schedule's fire lists the selected Nodes' metadata from the API
		// server, their annotations with it.
		{name: "pad=240KiB-elsewhere/schedule", key: "example.com/pad", pad: 240 << 10, schedule: true},
	} {
		b.Run(fmt.Sprintf("N=%d/%s", nodes, c.name), func(b *testing.B) {
			for range b.N {
				heap, rss, peak := paddedOperatorMemory(b, operatorBin, nodes, c)
				b.ReportMetric(heap, "operator-heap-after-GC-MiB")
				b.ReportMetric(rss, "operator-RSS-MiB")
				b.ReportMetric(peak, "operator-peak-RSS-MiB")
			}
		})
	}
}

// paddedCase is one cluster of BenchmarkPaddedNodes: pad bytes under key
// on every Node (none when pad is 0), and, once the operator has seen
// them, with rollout, a pool of all of them given a desiredConfig, with
// schedule, a dry-run schedule of all of them that fires.
type paddedCase struct {
	name              string
	key               string
	pad               int
	rollout, schedule bool
}

// paddedOperatorMemory makes nodes Nodes as c says, starts the operator,
// and returns its memory in MiB once it has seen them (and, for a
// rollout, written every node's desired-config): its heap after a GC, its
// resident and its peak resident memory. The nodes are deleted after.
func paddedOperatorMemory(b *testing.B, operatorBin string, nodes int, c paddedCase) (heap, rss, peak float64) {
	b.StopTimer()
	ctx := context.Background()
	defer cleanup(b, paddedPool)
	start := time.Now()
	createPaddedNodes(b, nodes, c.key, c.pad)
	b.Logf("%d nodes (%s) made in %s", nodes, c.name, time.Since(start).Round(time.Second))

	b.Setenv("GOMEMLIMIT", "512MiB")
	op, metricsURL := startOperator(b, operatorBin)
	defer op.stop()
	// The gate has looked at the nodes once it has reconciled a pool (all
	// of them are in the default pool).
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		count, _, err := reconcileTime(metricsURL, "gate")
		return err == nil && count >= 1, nil
	})
	if err != nil {
		b.Fatalf("the gate reconciled no pool within 2 minutes: %v", err)
	}
	if c.rollout {
		rollAll(b, metricsURL, nodes)
	}
	if c.schedule {
		fireSchedule(b)
	}
	heapBytes, err := heapAfterGC(op.pprof)
	if err != nil {
		b.Fatal(err)
	}
	peakBytes, _, err := processStats(op.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	rssBytes, err := residentBytes(op.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	const mib = 1 << 20
	return float64(heapBytes) / mib, float64(rssBytes) / mib, float64(peakBytes) / mib
}

// rollAll makes a pool of the padded nodes with a desiredConfig and waits
// until the operator has written it on each (its client's PATCH requests),
// which its gate does in one pass.
func rollAll(b *testing.B, metricsURL string, nodes int) {
	b.Helper()
	ctx := context.Background()
	pool := gen.Pool(paddedPool, intstr.FromInt32(1))
	pool.Spec.DesiredConfig = "v2"
	if err := bed.Client.Create(ctx, pool); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = bed.Client.Delete(ctx, pool) })
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(context.Context) (bool, error) {
		patches, err := clientRequestsOf(metricsURL, "PATCH")
		return err == nil && patches >= float64(nodes), nil
	})
	if err != nil {
		b.Fatalf("the operator did not write the desired config of %d nodes within 5 minutes: %v", nodes, err)
	}
	b.Logf("desired config written on %d nodes in %s", nodes, time.Since(start).Round(time.Second))
}

// fireSchedule makes a dry-run schedule of the padded nodes that fires
// every minute, and waits until it fired.
func fireSchedule(b *testing.B) {
	b.Helper()
	ctx := context.Background()
	p := &v1alpha1.RebootPolicy{ObjectMeta: metav1.ObjectMeta{Name: paddedPool}, Spec: v1alpha1.RebootPolicySpec{
		NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": paddedPool}},
		Schedule:     &v1alpha1.ScheduleTrigger{Cron: "* * * * *"},
		DryRun:       true,
	}}
	if err := bed.Client.Create(ctx, p); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = bed.Client.Delete(ctx, p) })
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := bed.Client.Get(ctx, client.ObjectKeyFromObject(p), p)
		// A new schedule's last fire is its creation, until it fires.
		return err == nil && p.Status.LastScheduleTime != nil && p.Status.LastScheduleTime.After(p.CreationTimestamp.Time), nil
	})
	if err != nil {
		b.Fatalf("the schedule did not fire within 3 minutes: %v", err)
	}
	b.Logf("the schedule fired %s after it was made", time.Since(start).Round(time.Second))
}

// clientRequestsOf sums rest_client_requests_total of one method from a
// metrics endpoint.
func clientRequestsOf(url, method string) (float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "rest_client_requests_total{") && strings.Contains(line, `method="`+method+`"`) {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			total += v
		}
	}
	return total, nil
}

// createPaddedNodes makes the realistic Nodes of paddedPool, eight at a
// time, each with pad bytes under key (none when pad is 0).
func createPaddedNodes(b *testing.B, nodes int, key string, pad int) {
	b.Helper()
	ctx := context.Background()
	value := strings.Repeat("x", pad)
	work := make(chan int)
	errs := make(chan error, nodes)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				name := fmt.Sprintf("padded-%05d", i)
				n := nodeshape.RealisticNode(name, paddedPool, i, fmt.Sprintf("10.%d.%d.%d", i/62500, i/250%250, i%250), fmt.Sprintf("boot-%05d", i))
				if pad > 0 {
					n.Annotations[key] = value
				}
				if err := gen.CreateNode(ctx, bed.Client, n); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range nodes {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	var list corev1.NodeList
	if err := bed.Client.List(ctx, &list, client.MatchingLabels{"pool": paddedPool}); err != nil || len(list.Items) != nodes {
		b.Fatalf("%d nodes of %d made: %v", len(list.Items), nodes, err)
	}
}

// heapAfterGC asks the process serving pprof at addr to collect its
// garbage and returns its heap in use then (runtime.MemStats.HeapAlloc, as
// the heap profile's text form reports it).
func heapAfterGC(addr string) (int64, error) {
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("the heap profile of %s reports no HeapAlloc", addr)
}

// residentBytes reads a process's resident memory now (VmRSS).
func residentBytes(pid int) (int64, error) {
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
}
