package memcluster

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kmaint/kmaint/api/scheme"
	"github.com/kmaint/kmaint/operator/metrics"
	"github.com/kmaint/kmaint/test/bench/smoke"
)

// Sizes are the pool sizes the per-event benchmarks run at: the end to
// end bench's smallest, its largest, and four times that; in a smoke run
// (make test's), the smallest alone.
func Sizes() []int {
	if smoke.On() {
		return []int{500}
	}
	return []int{500, 5000, 20000}
}

// RunSizes runs bench at each of Sizes, as sub-benchmarks nodes=N.
func RunSizes(b *testing.B, bench func(b *testing.B, nodes int)) {
	for _, n := range Sizes() {
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

// Events measures a benchmark's events, one reconcile each. An event's
// time is the operator's: the reconcile's, its writes' serving left out
// (Cluster.Served: what an API server would do), and the time the
// controller's handlers took for the changes made since the last event by
// others (a node back from its reboot, a daemon's request): those changes
// are what the reconcile is for. The writes' serving is kept apart, to be
// reported added back, as are the writes, the reads past the cache
// (LiveReader) and the Kubernetes Events recorded (Recorder).
type Events struct {
	c *Cluster
	// handled is the cluster's Handling when the last event ended: the
	// handlers' time since is the next event's.
	handled time.Duration
	// own and served are each event's time, and its writes' serving.
	own, served     []time.Duration
	writes, records int64
	// liveReads are the reads past the cache, by verb and kind.
	liveReads map[string]int64
}

// NewEvents measures the events of the controller that reconciles c.
func NewEvents(c *Cluster) *Events {
	e := &Events{c: c}
	e.Reset()
	return e
}

// Reset forgets the events measured, and the handlers' time until now.
func (e *Events) Reset() {
	e.own, e.served = e.own[:0], e.served[:0]
	e.writes, e.records, e.liveReads = 0, 0, map[string]int64{}
	e.Skip()
}

// Skip leaves the handlers' time until now out of the next event: changes
// a benchmark makes to set the next event up (Rollout.Refill) that no
// event of a real rollout makes.
func (e *Events) Skip() { e.handled = e.c.Handling() }

// Time runs f, the reconcile of one event, and keeps what it took.
func (e *Events) Time(f func() error) error {
	c := e.c
	handlers := c.Handling() - e.handled
	served, writes, reads, records := c.Served(), c.Writes(), c.LiveReads(), c.Recorded()
	began := time.Now()
	err := f()
	took := time.Since(began)
	servedNow := c.Served() - served
	e.own = append(e.own, took-servedNow+handlers)
	e.served = append(e.served, servedNow)
	e.writes += c.Writes() - writes
	for k, v := range c.LiveReads() {
		if v > reads[k] {
			e.liveReads[k] += v - reads[k]
		}
	}
	e.records += c.Recorded() - records
	e.handled = c.Handling()
	return err
}

// Own is the operator's time of each event measured.
func (e *Events) Own() []time.Duration { return slices.Clone(e.own) }

// LiveReads is how many reads past the cache the events measured made, by
// verb and kind ("get MaintenancePool").
func (e *Events) LiveReads() map[string]int64 { return maps.Clone(e.liveReads) }

// Report reports, per event: the operator's time, mean, p50 and p99
// (ms/event-mean, -p50, -p99); the same with the memory cluster's serving
// of the writes added back (ms/event-with-writes-mean, -p50, -p99); the
// writes, the reads past the cache and the Kubernetes Events recorded
// (writes/event, live-reads/event, k8s-events/event), and the reads past
// the cache by verb and kind (e.g. live-get-MaintenancePool/event).
// test/bench/perevent saves them.
func (e *Events) Report(b *testing.B) {
	if len(e.own) == 0 {
		return
	}
	n := float64(len(e.own))
	withWrites := make([]time.Duration, len(e.own))
	for i := range e.own {
		withWrites[i] = e.own[i] + e.served[i]
	}
	report := func(d []time.Duration, unit string) {
		d = slices.Clone(d)
		slices.Sort(d)
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(sum)/n, unit+"-mean")
		b.ReportMetric(ms(d[len(d)/2]), unit+"-p50")
		b.ReportMetric(ms(d[len(d)*99/100]), unit+"-p99")
	}
	report(e.own, "ms/event")
	report(withWrites, "ms/event-with-writes")
	b.ReportMetric(float64(e.writes)/n, "writes/event")
	var reads int64
	for k, v := range e.liveReads {
		reads += v
		verb, kind, _ := strings.Cut(k, " ")
		b.ReportMetric(float64(v)/n, "live-"+verb+"-"+kind+"/event")
	}
	b.ReportMetric(float64(reads)/n, "live-reads/event")
	b.ReportMetric(float64(e.records)/n, "k8s-events/event")
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
// KeepInFlight come back again once all did) and reconcile reconciles it,
// measured as Events measures. The controller's watches must be on the
// cluster (Watch). The first event runs outside the measure (a
// controller's first reconcile decodes every node) and check asks of it
// that it did what the benchmark says.
func (ro *Rollout) NodeEvents(b *testing.B, back func() (string, error), reconcile func(node string) error, check func(first string)) {
	if err := ro.KeepInFlight(); err != nil {
		b.Fatal(err)
	}
	events := NewEvents(ro.Cluster)
	event := func() string {
		if err := ro.Refill(); err != nil {
			b.Fatal(err)
		}
		events.Skip()
		name, err := back()
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := events.Time(func() error { return reconcile(name) }); err != nil {
			b.Fatal(err)
		}
		return name
	}
	b.StopTimer()
	check(event())
	events.Reset()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		event()
	}
	events.Report(b)
}
