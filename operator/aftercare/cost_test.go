package aftercare

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/test/memcluster"
)

// BenchmarkAftercareEvent measures what one event of a rolling reboot
// costs aftercare (one Reconcile of the pool) in pools of realistic nodes
// held as the informers hold them, without an API server (package
// memcluster), as BenchmarkGateEvent does the gate's: every node of the
// pool asking, a twentieth of them approved and rebooting. Each op is one
// of those nodes back from its reboot before its daemon is, whose return
// aftercare notes: the start of its bound on the daemon's confirmation.
// Reported besides: the reconcile's p50 and p99, its writes' serving left
// out (memcluster.Latencies).
func BenchmarkAftercareEvent(b *testing.B) { memcluster.RunSizes(b, benchmarkAftercareEvent) }

func benchmarkAftercareEvent(b *testing.B, n int) {
	const pool = "bench"
	ro, rec := memcluster.BenchRollout(b, pool, n)
	r := &Reconciler{Client: ro.Client(), Recorder: &events.FakeRecorder{}, Metrics: rec}
	r.prepare(ro.Informers(), ro.Client())
	// The nodes in flight as they were approved: once each came back,
	// they are put back, to come back again.
	if err := ro.KeepInFlight(); err != nil {
		b.Fatal(err)
	}
	ctx := ctrl.LoggerInto(context.Background(), ctrl.Log.WithName("bench"))
	var took memcluster.Latencies
	event := func() string {
		if err := ro.Refill(); err != nil {
			b.Fatal(err)
		}
		name, err := ro.BackBeforeItsDaemon()
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := took.Time(ro.Cluster, func() error {
			_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: pool}})
			return err
		}); err != nil {
			b.Fatal(err)
		}
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
	took.Report(b)
}

// noted reports whether aftercare noted the node back from its reboot.
func (r *Reconciler) noted(node string) bool {
	_, ok := r.backSightings.Get(node)
	return ok
}
