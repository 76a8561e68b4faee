package maintenance

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/index"
	"github.com/kmaint/kmaint/test/memcluster"
)

// BenchmarkMaintenanceEvent measures what one node's return from its
// reboot costs the maintenance controller (one Reconcile of the node,
// which moves its request to Succeeded) in pools of realistic nodes held
// as the informers hold them, without an API server (package memcluster),
// as BenchmarkGateEvent does the gate's. It works one node per reconcile:
// its cost should not grow with the pool.
func BenchmarkMaintenanceEvent(b *testing.B) { memcluster.RunSizes(b, benchmarkMaintenanceEvent) }

func benchmarkMaintenanceEvent(b *testing.B, n int) {
	ro, rec := memcluster.BenchRollout(b, "bench", n)
	r := &Reconciler{Client: ro.Client(), Recorder: &events.FakeRecorder{}, Clock: clock.RealClock{}, Metrics: rec, writes: newWritten()}
	// The nodes in flight and their requests as they were approved: once
	// each came back, they are put back, to come back again.
	if err := ro.KeepInFlight(); err != nil {
		b.Fatal(err)
	}
	ctx := ctrl.LoggerInto(context.Background(), ctrl.Log.WithName("bench"))
	var took memcluster.Latencies
	event := func() string {
		if err := ro.Refill(); err != nil {
			b.Fatal(err)
		}
		name, err := ro.BackFromReboot()
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := took.Time(ro.Cluster, func() error {
			_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: name}})
			return err
		}); err != nil {
			b.Fatal(err)
		}
		return name
	}
	b.StopTimer()
	// The event is what it claims: the node's request succeeds.
	first := event()
	var its v1alpha1.NodeMaintenanceList
	if err := ro.Client().List(ctx, &its, client.MatchingFields{index.NodeName: first}); err != nil {
		b.Fatal(err)
	}
	if len(its.Items) != 1 || its.Items[0].Status.Phase != v1alpha1.PhaseSucceeded {
		b.Fatalf("node %s back from its reboot: its requests are %+v, want one Succeeded", first, its.Items)
	}
	took = took[:0]
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		event()
	}
	took.Report(b)
	var list v1alpha1.NodeMaintenanceList
	if err := ro.Client().List(ctx, &list, client.MatchingFields{index.State: index.Open}); err != nil {
		b.Fatal(err)
	}
	if open := len(list.Items); open > n {
		b.Fatalf("%d requests open in a pool of %d nodes", open, n)
	}
}
