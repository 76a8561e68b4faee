package memcluster

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kmaint/kmaint/api/scheme"
	"github.com/kmaint/kmaint/operator/metrics"
)

// Sizes are the pool sizes the per-event benchmarks run at: the end to
// end bench's smallest, its largest, and four times that.
var Sizes = []int{500, 5000, 20000}

// RunSizes runs bench at each of Sizes, as sub-benchmarks nodes=N.
func RunSizes(b *testing.B, bench func(b *testing.B, nodes int)) {
	for _, n := range Sizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { bench(b, n) })
	}
}

// BenchRollout is NewRollout in a new Cluster of the operator's scheme,
// with a twentieth of the pool in flight (25 of 500, as the end to end
// bench), and a metrics recorder of its own for the controller under test.
func BenchRollout(b testing.TB, pool string, n int) (*Rollout, *metrics.Recorder) {
	b.Helper()
	s, err := scheme.New()
	if err != nil {
		b.Fatal(err)
	}
	ro, err := NewRollout(New(s), pool, n, max(n/20, 1))
	if err != nil {
		b.Fatal(err)
	}
	rec, err := metrics.NewRecorder(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	return ro, rec
}

// Latencies are the durations of a benchmark's reconciles, less what the
// cluster spent serving their writes (an API server's work).
type Latencies []time.Duration

// Time runs f, a reconcile against c, and keeps how long it took but for
// c's serving of its writes.
func (l *Latencies) Time(c *Cluster, f func() error) error {
	served, began := c.Served(), time.Now()
	err := f()
	*l = append(*l, time.Since(began)-(c.Served()-served))
	return err
}

// Report reports their p50 and p99 as ms/reconcile-p50 and -p99, which
// test/bench/perevent saves.
func (l Latencies) Report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Microseconds())/1000, "ms/reconcile-p50")
	b.ReportMetric(float64(l[len(l)*99/100].Microseconds())/1000, "ms/reconcile-p99")
}

// LiveHeapMiB is the heap still referenced, after a collection: taken
// before a controller's first reconcile and after its last, the
// difference is what it keeps between reconciles (and the few objects the
// run added to the cluster), which b reports as MiB-kept.
func LiveHeapMiB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// NodeEvents benchmarks one event per op: back brings the oldest node in
// flight back (BackFromReboot or BackBeforeItsDaemon; the nodes kept by
// KeepInFlight come back again once all did) and reconcile, timed but for
// the cluster's serving of its writes, reconciles it. The first event runs
// outside the measure (a controller's first reconcile decodes every node)
// and check asks of it that it did what the benchmark says. Reports the
// reconciles' p50 and p99.
func (ro *Rollout) NodeEvents(b *testing.B, back func() (string, error), reconcile func(node string) error, check func(first string)) {
	if err := ro.KeepInFlight(); err != nil {
		b.Fatal(err)
	}
	var took Latencies
	event := func() string {
		if err := ro.Refill(); err != nil {
			b.Fatal(err)
		}
		name, err := back()
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := took.Time(ro.Cluster, func() error { return reconcile(name) }); err != nil {
			b.Fatal(err)
		}
		return name
	}
	b.StopTimer()
	check(event())
	took = took[:0]
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		event()
	}
	took.Report(b)
}
