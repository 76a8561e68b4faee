package aftercare

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/scheme"
	"github.com/kmaint/kmaint/operator/metrics"
	"github.com/kmaint/kmaint/test/memcluster"
)

// BenchmarkAftercareEvent measures what one event of a rolling reboot
// costs aftercare (one Reconcile of the pool) in pools of realistic nodes
// held as the informers hold them, without an API server (package
// memcluster), as BenchmarkGateEvent does the gate's: every node of the
// pool asking, a twentieth of them approved and rebooting. Each op is one
// of those nodes back from its reboot before its daemon is, whose return
// aftercare notes: the start of its bound on the daemon's confirmation. Reported besides: the reconcile's p50 and
// p99.
func BenchmarkAftercareEvent(b *testing.B) {
	for _, n := range []int{500, 5000, 20000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchmarkAftercareEvent(b, n) })
	}
}

func benchmarkAftercareEvent(b *testing.B, n int) {
	s, err := scheme.New()
	if err != nil {
		b.Fatal(err)
	}
	const pool = "bench"
	ro, err := memcluster.NewRollout(memcluster.New(s), pool, n, max(n/20, 1))
	if err != nil {
		b.Fatal(err)
	}
	rec, err := metrics.NewRecorder(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	r := &Reconciler{Client: ro.Client(), Recorder: &events.FakeRecorder{}, Metrics: rec}
	r.prepare(ro.Informers(), ro.Client())
	// The nodes in flight as they were approved: once each came back,
	// they are put back, to come back again.
	var approved []*corev1.Node
	for _, name := range ro.InFlight {
		node, err := ro.Node(name)
		if err != nil {
			b.Fatal(err)
		}
		approved = append(approved, node)
	}
	ctx := ctrl.LoggerInto(context.Background(), ctrl.Log.WithName("bench"))
	var took []time.Duration
	event := func() string {
		if len(ro.InFlight) == 0 {
			for _, node := range approved {
				if err := ro.Set(node.DeepCopy()); err != nil {
					b.Fatal(err)
				}
				ro.InFlight = append(ro.InFlight, node.Name)
			}
		}
		name, err := ro.BackBeforeItsDaemon()
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		began := time.Now()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: pool}}); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(began))
		return name
	}
	b.StopTimer()
	// The first reconcile decodes every node. The event is what it claims:
	// aftercare notes when the node came back without its daemon's word,
	// the start of the bound on that wait.
	if first := event(); !r.noted(first) {
		b.Fatalf("node %s came back and aftercare did not note it", first)
	}
	took = took[:0]
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		event()
	}
	slices.Sort(took)
	if len(took) > 0 {
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms/reconcile-p50")
		b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "ms/reconcile-p99")
	}
}

// noted reports whether aftercare noted the node back from its reboot.
func (r *Reconciler) noted(node string) bool {
	_, ok := r.backSightings.Get(node)
	return ok
}
