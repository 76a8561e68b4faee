package memcluster_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/kmaint/kmaint/api/scheme"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/cacheread"
	"github.com/kmaint/kmaint/operator/enqueue"
	"github.com/kmaint/kmaint/operator/index"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/memcluster"
)

func TestClusterServesReadsAndPatches(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s, err := scheme.New()
	g.Expect(err).NotTo(HaveOccurred())
	c := memcluster.New(s)
	open := &v1alpha1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: "open"}, Spec: v1alpha1.NodeMaintenanceSpec{NodeName: "n1"}}
	done := &v1alpha1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: "done"}, Spec: v1alpha1.NodeMaintenanceSpec{NodeName: "n1"},
		Status: v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseSucceeded}}
	g.Expect(c.Add(gen.Node("n1"), gen.Node("n2"), open, done)).To(Succeed())
	cl := c.Client()

	// The operator's indexes answer Lists.
	var list v1alpha1.NodeMaintenanceList
	g.Expect(cl.List(ctx, &list, client.MatchingFields{index.OpenOnNode: "n1"})).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	g.Expect(list.Items[0].Name).To(Equal("open"))

	// A patch is applied and returned; one made on a stale copy with a
	// lock is refused.
	var node corev1.Node
	g.Expect(cl.Get(ctx, client.ObjectKey{Name: "n1"}, &node)).To(Succeed())
	stale := node.DeepCopy()
	base := node.DeepCopy()
	node.Spec.Unschedulable = true
	g.Expect(cl.Patch(ctx, &node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))).To(Succeed())
	g.Expect(node.ResourceVersion).NotTo(Equal(base.ResourceVersion))
	g.Expect(c.Served()).To(BeNumerically(">", 0), "the time spent applying it is counted as the cluster's")
	again := stale.DeepCopy()
	again.Labels = map[string]string{"a": "b"}
	err = cl.Patch(ctx, again, client.MergeFromWithOptions(stale, client.MergeFromWithOptimisticLock{}))
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "got %v", err)

	// The informers' store holds what was written, as a new object.
	nodes, err := cacheread.All(ctx, c.Informers(), &corev1.Node{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(nodes).To(HaveLen(2))
	for _, n := range nodes {
		g.Expect(n.Spec.Unschedulable).To(Equal(n.Name == "n1"), n.Name)
	}
	g.Expect(stale.Spec.Unschedulable).To(BeFalse(), "what a reader held is unchanged")

	err = cl.Get(ctx, client.ObjectKey{Name: "n3"}, &node)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "got %v", err)
}

// slowPatch is a merge patch whose building takes d.
type slowPatch struct {
	client.Patch
	d time.Duration
}

func (p slowPatch) Data(obj client.Object) ([]byte, error) {
	time.Sleep(p.d) // stands for the encoding of a large object
	return p.Patch.Data(obj)
}

// An event's time holds the patch's building and the controller's
// handlers, the changes' of others before it and its own: only the
// applying of the write is left out. The writes and the reads past the
// cache are counted.
func TestAnEventCountsThePatchBuildingAndTheHandlers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s, err := scheme.New()
	g.Expect(err).NotTo(HaveOccurred())
	c := memcluster.New(s)
	g.Expect(c.Add(gen.Node("n1"))).To(Succeed())
	// Each stands for work that takes long enough to tell apart from
	// the memory cluster's serving of a write, well under a millisecond.
	const d = 200 * time.Millisecond
	var told int
	var handled []time.Duration // what each handler call really took: a sleep may overrun d
	handler := handler.Funcs{UpdateFunc: func(context.Context, event.UpdateEvent, enqueue.Queue) {
		told++
		start := time.Now()
		time.Sleep(d) // stands for a handler's work
		handled = append(handled, time.Since(start))
	}}
	g.Expect(c.Watch(ctx, memcluster.Queue(t), enqueue.Watch{Object: &corev1.Node{}, Handler: handler})).To(Succeed())
	events := memcluster.NewEvents(c)

	// Another's change, then the event: one patch, one read past the cache.
	other, err := c.Object(&corev1.Node{}, client.ObjectKey{Name: "n1"})
	g.Expect(err).NotTo(HaveOccurred())
	changed := other.DeepCopyObject().(*corev1.Node)
	changed.Labels = map[string]string{"pool": "a"}
	g.Expect(c.Set(changed)).To(Succeed())
	began := time.Now()
	g.Expect(events.Time(func() error {
		var node corev1.Node
		if err := c.LiveReader().Get(ctx, client.ObjectKey{Name: "n1"}, &node); err != nil {
			return err
		}
		base := node.DeepCopy()
		node.Spec.Unschedulable = true
		return c.Client().Patch(ctx, &node, slowPatch{Patch: client.MergeFrom(base), d: d})
	})).To(Succeed())
	took := time.Since(began)
	g.Expect(told).To(Equal(2), "the handler was told of the other's change and of the event's write")
	g.Expect(c.Served()).To(BeNumerically("<", d), "the serving holds neither the patch's building nor the handlers")
	g.Expect(c.Writes()).To(Equal(int64(1)))
	g.Expect(events.LiveReads()).To(Equal(map[string]int64{"get Node": 1}))
	// The event's own time is what it took, less the serving, plus the
	// handler's for the change before it: the handler twice and the
	// patch's building.
	own := events.Own()
	g.Expect(own).To(HaveLen(1))
	g.Expect(own[0]).To(BeNumerically(">=", 3*d))
	g.Expect(own[0]).To(BeNumerically("<=", took+handled[0]+time.Millisecond),
		"the handler before the event (%v) is the only time counted outside it, give or take the clock's reads", handled[0])
}
