package harness

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/sim"
	"github.com/kmaint/kmaint/test/testbed"
)

// Main runs a package's tests against a real API server, started before and
// stopped after them, with pod deletions finished as kubelets would. It
// stores the server in *bed for the tests and returns the exit code. opts
// change how the API server runs, e.g. testbed.WithAuditLog.
func Main(m *testing.M, bed **testbed.Bed, opts ...testbed.Option) int {
	SetLogger()
	b, err := testbed.Start(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*bed = b
	// A test binary stopped by a signal (a person's ^C, a CI job cancelled,
	// a benchmark killed) runs no deferred cleanup: without this, its
	// kube-apiserver and etcd outlive it and load the machine for every
	// run after.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	go func() {
		if sig, ok := <-signals; ok {
			fmt.Fprintf(os.Stderr, "%s: stopping the test API server and etcd\n", sig)
			if err := b.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
			os.Exit(1)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	err = gen.FinishPodDeletions(ctx, kubernetes.NewForConfigOrDie(b.Config))
	code := 1
	if err == nil {
		code = m.Run()
	} else {
		fmt.Fprintln(os.Stderr, err)
	}
	cancel()
	if err := b.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

// StartOperator runs a fresh operator until the returned stop is called or
// the test ends. Stop waits until the operator has fully stopped, so a test
// can start another one, as a restarted pod would.
func StartOperator(t testing.TB, bed *testbed.Bed) (stop func()) {
	t.Helper()
	return StartOperatorWith(t, bed, operator.Options{})
}

// StartOperatorWith is StartOperator with options, e.g. a Prometheus URL or
// a fake clock.
func StartOperatorWith(t testing.TB, bed *testbed.Bed, opts operator.Options) (stop func()) {
	t.Helper()
	return startOperatorOn(t, bed.Config, opts)
}

// startOperatorOn starts the operator with cfg until stop or the test's end.
func startOperatorOn(t testing.TB, cfg *rest.Config, opts operator.Options) (stop func()) {
	t.Helper()
	op, err := sim.StartOperator(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	stop = func() {
		if err := op.Stop(); err != nil {
			t.Errorf("operator stopped with an error: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// StartOperatorStalling starts the operator with its watches of resource
// (a path's end, e.g. "/maintenancepools") held while the returned
// StalledWatches is stalled.
func StartOperatorStalling(t testing.TB, bed *testbed.Bed, resource string, opts operator.Options) *StalledWatches {
	t.Helper()
	watches := &StalledWatches{Resource: resource}
	cfg := rest.CopyConfig(bed.Config)
	cfg.Wrap(watches.Wrap)
	startOperatorOn(t, cfg, opts)
	t.Cleanup(watches.Release) // before the operator stops: its watches must end
	return watches
}

// FreeAddr returns a free address on 127.0.0.1 for a server a test starts.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// CreateNodes creates n nodes named prefix-0 ... labelled pool=pool.
func CreateNodes(t testing.TB, bed *testbed.Bed, prefix, pool string, n int, opts ...gen.NodeOption) []string {
	t.Helper()
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		all := append([]gen.NodeOption{gen.Labels("pool", pool)}, opts...)
		if err := gen.CreateNode(context.Background(), bed.Client, gen.Node(name, all...)); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	return names
}

// Unavailable is the test's own reading of invariant 1: a node is unavailable
// when it is approved, admitted (draining), settling after its reboot,
// cordoned or not Ready.
func Unavailable(n *corev1.Node) bool {
	_, approved := n.Annotations[protocol.RebootApproved]
	_, admitted := n.Annotations[protocol.Admitted]
	_, settling := n.Annotations[protocol.Settling]
	return approved || admitted || settling || n.Spec.Unschedulable || !protocol.Ready(n)
}

// BudgetWatcher sees every change to a pool's nodes and remembers the most
// unavailable at any one moment.
type BudgetWatcher struct {
	// limit, when above zero, fails the test the moment more nodes than
	// that are unavailable at once.
	limit int
	// byAdmissions counts, for most and limit, the nodes kmaint made
	// unavailable, and fails an admission made while the others
	// unavailable for any reason fill the budget (ByAdmissions).
	byAdmissions bool
	t            testing.TB

	mu      sync.Mutex
	nodes   map[string]*corev1.Node
	most    int
	moments int
}

// watchUntilEnd watches the objects of list's kind until the test ends,
// when the returned context is cancelled, or until cancel is called.
func watchUntilEnd(t testing.TB, bed *testbed.Bed, list client.ObjectList, opts ...client.ListOption) (w watch.Interface, ctx context.Context, cancel func()) {
	t.Helper()
	ctx, cancel = context.WithCancel(context.Background())
	t.Cleanup(cancel)
	wc, err := client.NewWithWatch(bed.Config, client.Options{Scheme: bed.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err = wc.Watch(ctx, list, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return w, ctx, cancel
}

// watchPool watches the nodes labelled pool=pool until the test ends.
func watchPool(t testing.TB, bed *testbed.Bed, pool string) (watch.Interface, context.Context) {
	t.Helper()
	w, ctx, _ := watchUntilEnd(t, bed, &corev1.NodeList{}, client.MatchingLabels{"pool": pool})
	return w, ctx
}

// WatchBudget starts a watcher on the nodes labelled pool=pool.
func WatchBudget(t testing.TB, bed *testbed.Bed, pool string) *BudgetWatcher {
	t.Helper()
	w, _ := watchPool(t, bed, pool)
	bw := &BudgetWatcher{nodes: map[string]*corev1.Node{}, t: t}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			bw.mu.Lock()
			prev := bw.nodes[n.Name]
			if ev.Type == watch.Deleted {
				delete(bw.nodes, n.Name)
			} else {
				bw.nodes[n.Name] = n
			}
			counts := Unavailable
			if bw.byAdmissions {
				counts = madeUnavailable
				bw.checkAdmission(pool, prev, n, ev.Type)
			}
			count := 0
			for _, n := range bw.nodes {
				if counts(n) {
					count++
				}
			}
			bw.most = max(bw.most, count)
			if bw.limit > 0 && count > bw.limit {
				var names []string
				for _, n := range bw.nodes {
					if counts(n) {
						names = append(names, n.Name)
					}
				}
				bw.t.Errorf("invariant 1 broken in pool %s: %d nodes unavailable, at most %d allowed: %v", pool, count, bw.limit, names)
			}
			bw.moments++
			bw.mu.Unlock()
		}
	}()
	return bw
}

// FailAbove makes the watcher fail the test the moment more than limit nodes
// are unavailable at once.
func (bw *BudgetWatcher) FailAbove(limit int) *BudgetWatcher {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	bw.limit = limit
	return bw
}

// ByAdmissions is the watcher for real nodes, whose kubelets may go NotReady
// on their own (starved on a loaded machine): kmaint cannot keep a node
// Ready, only refrain from adding to what is down. The watcher then counts
// the nodes kmaint made unavailable (admitted, approved, settling), and
// fails the test when kmaint admits a node while as many others as the
// limit are unavailable for any reason, NotReady included: invariant 1 as
// kmaint can keep it.
func (bw *BudgetWatcher) ByAdmissions() *BudgetWatcher {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	bw.byAdmissions = true
	return bw
}

// madeUnavailable reports whether kmaint made the node unavailable.
func madeUnavailable(n *corev1.Node) bool {
	_, approved := n.Annotations[protocol.RebootApproved]
	_, admitted := n.Annotations[protocol.Admitted]
	_, settling := n.Annotations[protocol.Settling]
	return approved || admitted || settling
}

// checkAdmission fails the test when n was admitted in this change while
// the others unavailable for any reason already filled the limit. Called
// with bw.mu held.
func (bw *BudgetWatcher) checkAdmission(pool string, prev, n *corev1.Node, typ watch.EventType) {
	if bw.limit <= 0 || typ == watch.Deleted || n.Annotations[protocol.Admitted] == "" ||
		prev != nil && prev.Annotations[protocol.Admitted] == n.Annotations[protocol.Admitted] {
		return
	}
	var others []string
	for name, o := range bw.nodes {
		if name != n.Name && Unavailable(o) {
			others = append(others, name)
		}
	}
	if len(others) >= bw.limit {
		bw.t.Errorf("invariant 1 broken in pool %s: %s admitted while %d others were unavailable, at most %d allowed in all: %v",
			pool, n.Name, len(others), bw.limit, others)
	}
}

// MostUnavailable returns the most nodes unavailable at once, and how many
// changes the watcher saw.
func (bw *BudgetWatcher) MostUnavailable() (most, moments int) {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	return bw.most, bw.moments
}

// Daemons plays the daemons of a pool's nodes: when a node's approval
// names its current boot, it reboots it (the one faked seam). It counts
// reboots per node.
type Daemons struct {
	mu      sync.Mutex
	reboots map[string]int
	order   []string
}

// RunDaemons starts fake daemons for the nodes labelled pool=pool; fast
// reboots never show NotReady.
func RunDaemons(t testing.TB, bed *testbed.Bed, pool string, fast bool) *Daemons {
	t.Helper()
	return RunDaemonsOf(t, bed, client.MatchingLabels{"pool": pool}, fast)
}

// RunDaemonsOf starts fake daemons for the nodes with these labels,
// whichever pool they are in, as RunDaemons does for one pool's: a test
// that moves nodes between pools labels them for their daemons apart.
func RunDaemonsOf(t testing.TB, bed *testbed.Bed, labels client.MatchingLabels, fast bool) *Daemons {
	t.Helper()
	w, ctx, _ := watchUntilEnd(t, bed, &corev1.NodeList{}, labels)
	d := &Daemons{reboots: map[string]int{}}
	rebooted := map[string]bool{} // boot IDs already rebooted from
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			boot := protocol.BootID(n)
			if n.Annotations[protocol.RebootApproved] != boot || rebooted[n.Name+"/"+boot] {
				continue
			}
			rebooted[n.Name+"/"+boot] = true
			d.mu.Lock()
			d.reboots[n.Name]++
			d.order = append(d.order, n.Name)
			next := fmt.Sprintf("%s-r%d", boot, d.reboots[n.Name])
			d.mu.Unlock()
			if err := gen.Reboot(ctx, bed.Client, n.Name, next, fast); err != nil && ctx.Err() == nil {
				t.Errorf("reboot %s: %v", n.Name, err)
			}
		}
	}()
	return d
}

// Count returns how often the node was rebooted.
func (d *Daemons) Count(node string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reboots[node]
}

// Order returns the nodes in the order they were rebooted.
func (d *Daemons) Order() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.order...)
}

// ExpectSettled asserts the node carries nothing of a reboot in progress or
// failed: no kmaint annotation but the config ones, the daemon's state, the
// record of the last forced drain (kept as history) and the operator's
// naming of the node's API requests (a finished one is dropped with the
// next write), Ready, and schedulable unless a person cordoned it. Call it in Eventually
// to wait for a node to settle after its reboot.
func ExpectSettled(g Gomega, bed *testbed.Bed, name string, cordonedByPerson bool) {
	n := GetNode(g, bed, name)
	for key := range n.Annotations {
		if strings.HasPrefix(key, protocol.Prefix) {
			g.Expect(key).To(BeElementOf(protocol.DesiredConfig, protocol.CurrentConfig, protocol.State, protocol.DrainForced, protocol.APIRequests),
				"%s left on node %s", key, name)
		}
	}
	g.Expect(n.Spec.Unschedulable).To(Equal(cordonedByPerson), "node %s unschedulable", name)
	g.Expect(protocol.Ready(n)).To(BeTrue(), "node %s Ready", name)
}

// zapLevel keeps the operator quiet in test output unless KMAINT_TEST_LOG is
// set, when it logs everything.
// SetLogger gives controller-runtime's global logger, which its clients and
// controllers log through, the tests' settings: errors only, or everything
// with KMAINT_TEST_LOG set. Without one it says so with a stack trace.
func SetLogger() {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
}

func zapLevel() zapcore.Level {
	if os.Getenv("KMAINT_TEST_LOG") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// RaiseMaintenances does the daemon's part for NodeMaintenances of these
// nodes, as RunDaemons does its part for approvals: each new one is raised
// in its node's reboot-requested annotation, its UID as the request id.
// It stops when the returned stop is called or the test ends.
func RaiseMaintenances(t testing.TB, bed *testbed.Bed, nodes ...string) (stop func()) {
	t.Helper()
	w, ctx, cancel := watchUntilEnd(t, bed, &v1alpha1.NodeMaintenanceList{})
	go func() {
		defer w.Stop()
		raised := map[types.UID]bool{}
		for ev := range w.ResultChan() {
			nm, ok := ev.Object.(*v1alpha1.NodeMaintenance)
			if !ok || ev.Type == watch.Deleted || raised[nm.UID] || !slices.Contains(nodes, nm.Spec.NodeName) {
				continue
			}
			raised[nm.UID] = true
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				return gen.Request(ctx, bed.Client, nm.Spec.NodeName, string(nm.UID), nm.Spec.Source, time.Now())
			})
			if err != nil && ctx.Err() == nil {
				t.Errorf("raise %s on node %s: %v", nm.Name, nm.Spec.NodeName, err)
			}
		}
	}()
	return cancel
}
