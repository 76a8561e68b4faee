package maintenance

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
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
// as BenchmarkGateEvent does the gate's, with the controller's watches'
// handlers (SetupWithManager's). It works one node per reconcile: its cost
// should not grow with the pool.
func BenchmarkMaintenanceEvent(b *testing.B) { memcluster.RunSizes(b, benchmarkMaintenanceEvent) }

func benchmarkMaintenanceEvent(b *testing.B, n int) {
	ro, rec := memcluster.BenchRollout(b, "bench", n)
	r := &Reconciler{Client: ro.Client(), Recorder: ro.Recorder("kmaint-maintenance"), Clock: clock.RealClock{}, Metrics: rec, writes: newWritten()}
	ctx := ctrl.LoggerInto(context.Background(), ctrl.Log.WithName("bench"))
	if err := ro.Watch(ctx, memcluster.Queue(b), r.watches()...); err != nil {
		b.Fatal(err)
	}
	ro.NodeEvents(b, ro.BackFromReboot, func(node string) error {
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: node}})
		return err
	}, func(first string) {
		// The node's request succeeds.
		var its v1alpha1.NodeMaintenanceList
		if err := ro.Client().List(ctx, &its, client.MatchingFields{index.NodeName: first}); err != nil {
			b.Fatal(err)
		}
		if len(its.Items) != 1 || its.Items[0].Status.Phase != v1alpha1.PhaseSucceeded {
			b.Fatalf("node %s back from its reboot: its requests are %+v, want one Succeeded", first, its.Items)
		}
	})
	var list v1alpha1.NodeMaintenanceList
	if err := ro.Client().List(ctx, &list, client.MatchingFields{index.State: index.Open}); err != nil {
		b.Fatal(err)
	}
	if open := len(list.Items); open > n {
		b.Fatalf("%d requests open in a pool of %d nodes", open, n)
	}
}
