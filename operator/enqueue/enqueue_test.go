package enqueue_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kmaint/kmaint/operator/enqueue"
)

// Each event hands its objects to the function: an update both, so that a
// controller sees an object where it was and where it is.
func TestObjectsHandsEveryObjectOfAnEvent(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	node := func(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	var got [][]string
	h := enqueue.Objects(func(_ context.Context, q enqueue.Queue, objs ...client.Object) {
		var names []string
		for _, o := range objs {
			names = append(names, o.GetName())
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: o.GetName()}})
		}
		got = append(got, names)
	})
	h.Create(ctx, event.CreateEvent{Object: node("created")}, q)
	h.Update(ctx, event.UpdateEvent{ObjectOld: node("old"), ObjectNew: node("new")}, q)
	h.Delete(ctx, event.DeleteEvent{Object: node("deleted")}, q)
	h.Generic(ctx, event.GenericEvent{Object: node("sent")}, q)
	g.Expect(got).To(Equal([][]string{{"created"}, {"old", "new"}, {"deleted"}, {"sent"}}))
	g.Expect(q.Len()).To(Equal(5), "the function's requests reach the queue")
}
