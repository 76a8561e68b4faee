package gate

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/cacheread"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/test/memcluster"
)

// BenchmarkGateEvent measures what one event of a rolling reboot costs
// the gate (observe, decide, act: one Reconcile of the pool) in pools of
// realistic nodes (shape.RealisticNode) held as the informers hold them,
// without an API server (package memcluster): a rollout of every node of
// the pool under way, maxUnavailable a twentieth of it (25 at 500, as the
// end-to-end bench), every slot taken. Each op is the two events of one
// node's turn: a node's reboot completed (by aftercare, outside the
// measure: BenchmarkAftercareCompletion times it), whose slot the gate
// gives to the next node in the queue, admitting it and starting its
// drain; and that drain's end, which the gate approves. Completed nodes
// ask again, so the queue stays as long. An event's time is the operator's (memcluster.Events):
// the reconcile, with the patches it builds, and the gate's watches'
// handlers (SetupWithManager's) for its own writes and for the changes
// that caused the event (the node back, the node that asked again); only
// the memory cluster's applying of the writes, an API server's work, is
// left out, and reported added back beside the writes, the reads past the
// cache (the pool and the MaintenanceGate before an admission or approval,
// round trips in a real cluster; BenchmarkGateLiveRead times them against
// a real API server) and the Kubernetes Events. Drains are done at their
// first step (no pods). ns/op counts both reconciles, serving included.
// MiB-kept is the heap the gate holds after the run that it did not before
// its first reconcile (memcluster.LiveHeapMiB).
func BenchmarkGateEvent(b *testing.B) { memcluster.RunSizes(b, benchmarkGateEvent) }

// benchPool is the pool every benchmark's nodes are in.
const benchPool = "bench"

// doneDrainer finds every drain done at its first step.
type doneDrainer struct{ Drainer }

func (doneDrainer) PodsVersionAfter(context.Context, time.Time) (string, error) { return "1", nil }

func (doneDrainer) Step(context.Context, string, v1alpha1.DrainOptions, *drain.NodePods) (drain.Progress, error) {
	return drain.Progress{Done: true}, nil
}

// rollout is a pool's rollout in the memory cluster, moved on by the
// benchmark as the nodes' kubelets and daemons would, with the gate.
type rollout struct {
	*memcluster.Rollout
	r     *Reconciler
	drain chan string
}

func benchmarkGateEvent(b *testing.B, n int) {
	ro := newRollout(b, n)
	before := memcluster.LiveHeapMiB()
	ctx := ctrl.LoggerInto(context.Background(), ctrl.Log.WithName("bench"))
	events := memcluster.NewEvents(ro.Cluster)
	reconcile := func() {
		if err := events.Time(func() error {
			_, err := ro.r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: benchPool}})
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	// One turn first, outside the measure: the first reconcile decodes
	// every node.
	ro.comeBack(b)
	reconcile()
	ro.drained(b, reconcile)
	// An admission and an approval, each after the pool and the
	// MaintenanceGate were read from the API server (fresh.go).
	if reads := events.LiveReads(); reads["get MaintenancePool"] < 2 || reads["get MaintenanceGate"] < 2 {
		b.Fatalf("the gate admitted and approved a node after reads past its cache of %v, want the pool and the MaintenanceGate read before each", reads)
	}
	events.Reset()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		ro.comeBack(b)
		b.StartTimer()
		reconcile()
		ro.drained(b, reconcile)
	}
	b.StopTimer()
	events.Report(b)
	b.ReportMetric(memcluster.LiveHeapMiB()-before, "MiB-kept")
}

// newRollout makes a pool of n realistic nodes under a rollout, a
// twentieth of them in flight, and a gate whose drains are done at their
// first step.
func newRollout(b testing.TB, n int) *rollout {
	b.Helper()
	mr, rec := memcluster.BenchRollout(b, benchPool, n)
	ro := &rollout{Rollout: mr, drain: make(chan string, 16)}
	ro.r = &Reconciler{Client: ro.Client(), Drainer: doneDrainer{}, Recorder: ro.Recorder("kmaint-gate"), Metrics: rec, DrainPollInterval: time.Hour}
	ro.r.prepare(ro.Informers(), ro.LiveReader())
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	// The handlers SetupWithManager gives the watches, before anything
	// reconciles: the Node watch's tells the kept views
	// (poolnodes.TrackNodes).
	if err := ro.Watch(ctx, memcluster.Queue(b), ro.r.watches()...); err != nil {
		b.Fatal(err)
	}
	ro.r.steps.Start(ctx, func(string) { ro.drain <- "" })
	return ro
}

// comeBack has the oldest node in flight come back and its reboot
// completed, as aftercare completes it.
func (ro *rollout) comeBack(b testing.TB) {
	if _, err := ro.CompletedReboot(); err != nil {
		b.Fatal(err)
	}
}

// drained waits for the drain the last reconcile started to be found
// done, reconciles to approve it, and has the node it completed ask again.
func (ro *rollout) drained(b *testing.B, reconcile func()) {
	b.StopTimer()
	select {
	case <-ro.drain:
	case <-time.After(time.Minute):
		b.Fatal("no drain step in a minute")
	}
	b.StartTimer()
	reconcile()
	b.StopTimer()
	defer b.StartTimer()
	var admitted string
	nodes, err := cacheread.All(context.Background(), ro.Informers(), &corev1.Node{})
	if err != nil {
		b.Fatal(err)
	}
	for _, node := range nodes {
		st, _ := protocol.Read(node)
		switch {
		case st.Approved != "" && !slices.Contains(ro.InFlight, node.Name):
			admitted = node.Name
		case st.Requested == nil && st.Admission == nil && st.Approved == "":
			// Completed: it asks again, as in a rollout that never ends.
			again := node.DeepCopy()
			nm := ro.Ask(again)
			if err := ro.Set(again); err != nil {
				b.Fatal(err)
			}
			if err := ro.Add(nm); err != nil {
				b.Fatal(err)
			}
		}
	}
	if admitted == "" {
		b.Fatal("the turn approved no node")
	}
	ro.InFlight = append(ro.InFlight, admitted)
}
