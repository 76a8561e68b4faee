package checker

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/testbed"
)

// TestTheWatchesSeeEveryChangeOrSayWhichTheyDidNot, on a real API server:
// a watch cut and started again from its version sees what changed
// meanwhile one by one; one whose version is gone when it starts again
// (the API server restarted, etcd compacted) lists again, records the
// window it was blind in, and holds an admission it first sees in that
// list to the budget.
func TestTheWatchesSeeEveryChangeOrSayWhichTheyDidNot(t *testing.T) {
	g := NewWithT(t)
	bed, err := testbed.Start(testbed.WithCompactionEvery(time.Second))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(bed.Stop()).To(Succeed()) })
	ctx := t.Context()

	g.Expect(bed.Client.Create(ctx, gen.Pool("p", intstr.FromInt32(1)))).To(Succeed())
	for _, name := range []string{"a", "b", "c"} {
		g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(name, gen.Labels("pool", "p")))).To(Succeed())
	}
	wc, err := client.NewWithWatch(bed.Config, client.Options{Scheme: bed.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	cut := &cutWatches{WithWatch: wc}
	c := New("pool", time.Now)
	g.Expect(c.watchWith(ctx, cut)).To(Succeed())
	admit := func(name, boot string) {
		g.Expect(patchNode(ctx, bed.Client, name, admitted(boot, "p"))).To(Succeed())
	}
	release := func(name string) {
		g.Expect(patchNode(ctx, bed.Client, name, func(n *corev1.Node) { n.Annotations = map[string]string{}; n.Spec.Unschedulable = false })).To(Succeed())
	}
	held := func(name string) func() bool {
		return func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.nodes[name].held()
		}
	}

	// Cut, a change made, and watched again from the version it had:
	// the API server's watch cache still holds it.
	cut.cut()
	admit("a", "a1")
	cut.resume()
	g.Eventually(held("a"), time.Minute).Should(BeTrue())
	g.Expect(c.Violations()).To(BeEmpty())
	g.Expect(c.Blind()).To(BeEmpty())
	g.Expect(c.Checked()).To(HaveKeyWithValue(CheckedAdmissions, 1))

	// Cut, a's release and b's admission made, then c's admission past
	// the budget, and the API server restarted: its new watch cache
	// begins after the versions the watches had.
	cut.cut()
	release("a")
	admit("b", "b1")
	admit("c", "c1")
	g.Expect(bed.RestartAPIServer(ctx, time.Second)).To(Succeed())
	cut.resume()
	g.Eventually(held("c"), time.Minute).Should(BeTrue())
	g.Eventually(func() []string {
		var kinds []string
		for _, w := range c.Blind() {
			kinds = append(kinds, w.Kind)
		}
		return kinds
	}, time.Minute).Should(ContainElements("nodes", "pools", "nodemaintenances"), "each kind listed again")
	vs := c.Violations()
	g.Expect(invariants(vs)).To(ContainElement(Budget), "%v", vs)
	g.Expect(vs[0].Message).To(ContainSubstring("first seen in a list"))
	g.Expect(c.Checked()).To(HaveKeyWithValue(CheckedAdmissions, 3), "a's, then b's and c's in the list")
}

// cutWatches cuts its watches on demand and holds new ones until resumed,
// as a client cut off from the API server for a while.
type cutWatches struct {
	client.WithWatch
	mu   sync.Mutex
	held chan struct{}
	live []watch.Interface
}

func (w *cutWatches) Watch(ctx context.Context, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	w.mu.Lock()
	held := w.held
	w.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	wi, err := w.WithWatch.Watch(ctx, list, opts...)
	if err == nil {
		w.mu.Lock()
		w.live = append(w.live, wi)
		w.mu.Unlock()
	}
	return wi, err
}

func (w *cutWatches) cut() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held = make(chan struct{})
	for _, wi := range w.live {
		wi.Stop()
	}
	w.live = nil
}

func (w *cutWatches) resume() {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.held)
	w.held = nil
}

func patchNode(ctx context.Context, c client.Client, name string, change func(*corev1.Node)) error {
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		return err
	}
	base := n.DeepCopy()
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	change(&n)
	return c.Patch(ctx, &n, client.MergeFrom(base))
}
