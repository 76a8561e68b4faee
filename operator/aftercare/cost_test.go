package aftercare

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/test/memcluster"
)

// BenchmarkAftercareEvent measures what one event of a rolling reboot
// costs aftercare (one Reconcile of the pool) in pools of realistic nodes
// held as the informers hold them, without an API server (package
// memcluster), as BenchmarkGateEvent does the gate's: every node of the
// pool asking, a twentieth of them approved and rebooting. Each op is one
// of those nodes back from its reboot before its daemon is, whose return
// aftercare notes: the start of its bound on the daemon's confirmation.
// An event's time is the operator's, with aftercare's watches' handlers
// (SetupWithManager's), as memcluster.Events counts it.
func BenchmarkAftercareEvent(b *testing.B) { memcluster.RunSizes(b, benchmarkAftercareEvent) }

func benchmarkAftercareEvent(b *testing.B, n int) {
	ro, r, reconcile := benchAftercare(b, n)
	ro.NodeEvents(b, ro.BackBeforeItsDaemon, reconcile, func(first string) {
		// Aftercare notes when the node came back without its daemon's
		// word: the start of the bound on that wait.
		if !r.noted(first) {
			b.Fatalf("node %s came back and aftercare did not note it", first)
		}
	})
}

// noted reports whether aftercare noted the node back from its reboot.
func (r *Reconciler) noted(node string) bool {
	_, ok := r.backSightings.Get(node)
	return ok
}

// BenchmarkAftercareCompletion measures, as BenchmarkAftercareEvent does,
// the event that ends a node's reboot: the node back from it, its daemon's
// word given, which aftercare completes in one patch (no afterReboot hooks,
// the bench pool settles at once). Before the gate's work after the reboot
// moved here, BenchmarkGateEvent's events held this one.
func BenchmarkAftercareCompletion(b *testing.B) { memcluster.RunSizes(b, benchmarkAftercareCompletion) }

func benchmarkAftercareCompletion(b *testing.B, n int) {
	ro, _, reconcile := benchAftercare(b, n)
	ro.NodeEvents(b, ro.BackFromReboot, reconcile, func(first string) {
		node, err := ro.Node(first)
		if err != nil {
			b.Fatal(err)
		}
		if s, _ := protocol.Read(node); s.Approved != "" || s.Admission != nil {
			b.Fatalf("node %s came back with its daemon's word and aftercare did not complete it", first)
		}
	})
}

// benchAftercare is a rollout of n nodes in the memory cluster, aftercare
// watching it as SetupWithManager has it watch, and one reconcile of the
// rollout's pool.
func benchAftercare(b *testing.B, n int) (*memcluster.Rollout, *Reconciler, func(string) error) {
	const pool = "bench"
	ro, rec := memcluster.BenchRollout(b, pool, n)
	r := &Reconciler{Client: ro.Client(), Recorder: ro.Recorder("kmaint-aftercare"), Metrics: rec}
	r.prepare(ro.Informers(), ro.LiveReader())
	ctx := ctrl.LoggerInto(context.Background(), ctrl.Log.WithName("bench"))
	if err := ro.Watch(ctx, memcluster.Queue(b), r.watches()...); err != nil {
		b.Fatal(err)
	}
	return ro, r, func(string) error {
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: pool}})
		return err
	}
}
