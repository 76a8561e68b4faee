package maintenance

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/scheme"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/index"
	"github.com/kmaint/kmaint/operator/metrics"
	"github.com/kmaint/kmaint/test/memcluster"
)

// BenchmarkMaintenanceEvent measures what one node's return from its
// reboot costs the maintenance controller (one Reconcile of the node,
// which moves its request to Succeeded) in pools of realistic nodes held
// as the informers hold them, without an API server (package memcluster),
// as BenchmarkGateEvent does the gate's. It works one node per reconcile:
// its cost should not grow with the pool.
func BenchmarkMaintenanceEvent(b *testing.B) {
	for _, n := range []int{500, 5000, 20000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchmarkMaintenanceEvent(b, n) })
	}
}

func benchmarkMaintenanceEvent(b *testing.B, n int) {
	s, err := scheme.New()
	if err != nil {
		b.Fatal(err)
	}
	ro, err := memcluster.NewRollout(memcluster.New(s), "bench", n, max(n/20, 1))
	if err != nil {
		b.Fatal(err)
	}
	rec, err := metrics.NewRecorder(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	r := &Reconciler{Client: ro.Client(), Recorder: &events.FakeRecorder{}, Clock: clock.RealClock{}, Metrics: rec, writes: newWritten()}
	// The nodes in flight and their requests as they were approved: once
	// each came back, they are put back, to come back again.
	var approved []client.Object
	inFlight := slices.Clone(ro.InFlight)
	for _, name := range inFlight {
		node, err := ro.Node(name)
		if err != nil {
			b.Fatal(err)
		}
		var open v1alpha1.NodeMaintenanceList
		if err := ro.Client().List(context.Background(), &open, client.MatchingFields{index.OpenOnNode: name}); err != nil {
			b.Fatal(err)
		}
		approved = append(approved, node)
		for i := range open.Items {
			approved = append(approved, &open.Items[i])
		}
	}
	ctx := ctrl.LoggerInto(context.Background(), ctrl.Log.WithName("bench"))
	var took []time.Duration
	event := func() string {
		if len(ro.InFlight) == 0 {
			for _, obj := range approved {
				if err := ro.Set(obj.DeepCopyObject().(client.Object)); err != nil {
					b.Fatal(err)
				}
			}
			ro.InFlight = slices.Clone(inFlight)
		}
		name, err := ro.BackFromReboot()
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		began := time.Now()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(began))
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
	slices.Sort(took)
	if len(took) > 0 {
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms/reconcile-p50")
		b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "ms/reconcile-p99")
	}
	var list v1alpha1.NodeMaintenanceList
	if err := ro.Client().List(ctx, &list, client.MatchingFields{index.State: index.Open}); err != nil {
		b.Fatal(err)
	}
	if open := len(list.Items); open > n {
		b.Fatalf("%d requests open in a pool of %d nodes", open, n)
	}
}
