package gate

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/scheme"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/operator/metrics"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/memcluster"
	"github.com/kmaint/kmaint/test/shape"
)

// BenchmarkGateEvent measures what one event of a rolling reboot costs
// the gate (observe, decide, act: one Reconcile of the pool) in pools of
// realistic nodes (shape.RealisticNode) held as the informers hold them,
// without an API server (package memcluster): a rollout of every node of
// the pool under way, maxUnavailable a twentieth of it (25 at 500, as the
// end-to-end bench), every slot taken. Each op is the two events of one
// node's turn: a node back from its reboot, which the gate completes,
// admitting the next node in the queue and starting its drain; and that
// drain's end, which the gate approves. Completed nodes ask again, so the
// queue stays as long. Reported besides the usual: the reconcile's p50 and
// p99 (ms/reconcile-p50, -p99).
func BenchmarkGateEvent(b *testing.B) {
	for _, n := range []int{500, 5000, 20000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchmarkGateEvent(b, n) })
	}
}

// benchPool is the pool every benchmark's nodes are in.
const benchPool = "bench"

// doneDrainer finds every drain done at its first step.
type doneDrainer struct{ Drainer }

func (doneDrainer) Step(context.Context, string, v1alpha1.DrainOptions, string) (drain.Progress, error) {
	return drain.Progress{Done: true}, nil
}

// rollout is a pool's rollout in the memory cluster, moved on by the
// benchmark as the nodes' kubelets and daemons would.
type rollout struct {
	c     *memcluster.Cluster
	r     *Reconciler
	drain chan string
	// inFlight are the approved nodes, oldest first.
	inFlight []string
	// asked counts requests made, for their ids.
	asked int
	start time.Time
}

func benchmarkGateEvent(b *testing.B, n int) {
	ro := newRollout(b, n, max(n/20, 1))
	ctx := ctrl.LoggerInto(context.Background(), ctrl.Log.WithName("bench"))
	var took []time.Duration
	reconcile := func() {
		began := time.Now()
		if _, err := ro.r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: benchPool}}); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(began))
	}
	// One turn first, outside the measure: the first reconcile decodes
	// every node.
	ro.comeBack(b)
	reconcile()
	ro.drained(b, reconcile)
	took = took[:0]
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
	slices.Sort(took)
	if len(took) > 0 {
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms/reconcile-p50")
		b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "ms/reconcile-p99")
	}
}

// newRollout makes a pool of n realistic nodes, each asking for a config
// reboot with its NodeMaintenance open, budget of them in flight
// (approved, rebooting).
func newRollout(b testing.TB, n, budget int) *rollout {
	b.Helper()
	s, err := scheme.New()
	if err != nil {
		b.Fatal(err)
	}
	ro := &rollout{c: memcluster.New(s), drain: make(chan string, 16), start: time.Now().Add(-time.Hour)}
	pool := gen.Pool(benchPool, intstr.FromInt32(int32(budget)))
	pool.Spec.DesiredConfig = "os-2"
	if err := ro.c.Add(pool); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		name := fmt.Sprintf("node-%05d", i)
		node := shape.RealisticNode(name, benchPool, i, fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), "boot-0-"+name)
		node.Annotations[protocol.DesiredConfig] = "os-2"
		node.Annotations[protocol.CurrentConfig] = "os-1"
		id := ro.ask(node, "boot-0-"+name)
		if i < budget {
			at := ro.start.Add(time.Duration(i) * time.Millisecond)
			gen.Admitted(node.Status.NodeInfo.BootID, at, id)(node)
			gen.ApprovedAt(node.Status.NodeInfo.BootID, at, id)(node)
			gen.Unschedulable()(node)
			node.Annotations[protocol.Cordoned] = "true"
			ro.inFlight = append(ro.inFlight, name)
		}
		if err := ro.c.Add(node, ro.maintenance(name, id)); err != nil {
			b.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	rec, err := metrics.NewRecorder(reg)
	if err != nil {
		b.Fatal(err)
	}
	ro.r = &Reconciler{Client: ro.c.Client(), Drainer: doneDrainer{}, Recorder: &events.FakeRecorder{}, Metrics: rec, DrainPollInterval: time.Hour}
	ro.r.prepare(ro.c.Informers(), ro.c.Client())
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	ro.r.steps.Start(ctx, func(string) { ro.drain <- "" })
	return ro
}

// ask writes a config request on the node for boot, as its daemon does.
func (ro *rollout) ask(node *corev1.Node, boot string) string {
	ro.asked++
	id := "req-" + strconv.Itoa(ro.asked)
	r := gen.Req(id, v1alpha1.SourceConfig, ro.start.Add(time.Duration(ro.asked)*time.Millisecond))
	r.Config = "os-2"
	gen.Requested(boot, r)(node)
	return id
}

// maintenance is the open NodeMaintenance of a node's request.
func (ro *rollout) maintenance(node, id string) *v1alpha1.NodeMaintenance {
	return &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + id, CreationTimestamp: metav1.NewTime(ro.start)},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: node, Type: v1alpha1.RebootMaintenance, Source: v1alpha1.SourceConfig, Reason: "config os-2"},
		Status:     v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseRequested, RequestID: id},
	}
}

// comeBack brings the oldest node in flight back from its reboot: a new
// boot, Ready, and its daemon's request of the old boot gone.
func (ro *rollout) comeBack(b testing.TB) {
	name := ro.inFlight[0]
	ro.inFlight = ro.inFlight[1:]
	node := ro.node(b, name)
	node.Status.NodeInfo.BootID += "+"
	delete(node.Annotations, protocol.RebootRequested)
	if err := ro.c.Set(node); err != nil {
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
	nodes, err := ro.nodes()
	if err != nil {
		b.Fatal(err)
	}
	for _, node := range nodes {
		st, _ := protocol.Read(node)
		switch {
		case st.Approved != "" && !slices.Contains(ro.inFlight, node.Name):
			admitted = node.Name
		case st.Requested == nil && st.Admission == nil && st.Approved == "":
			// Completed: it asks again, as in a rollout that never ends.
			again := node.DeepCopy()
			id := ro.ask(again, again.Status.NodeInfo.BootID)
			if err := ro.c.Set(again); err != nil {
				b.Fatal(err)
			}
			if err := ro.c.Add(ro.maintenance(node.Name, id)); err != nil {
				b.Fatal(err)
			}
		}
	}
	if admitted == "" {
		b.Fatal("the turn approved no node")
	}
	ro.inFlight = append(ro.inFlight, admitted)
}

func (ro *rollout) node(b testing.TB, name string) *corev1.Node {
	obj, err := ro.c.Object(&corev1.Node{}, client.ObjectKey{Name: name})
	if err != nil {
		b.Fatal(err)
	}
	return obj.(*corev1.Node).DeepCopy()
}

func (ro *rollout) nodes() ([]*corev1.Node, error) {
	var list corev1.NodeList
	if err := ro.c.Client().List(context.Background(), &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}
