package poolnodes

import (
	"context"
	"maps"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/operator/enqueue"
)

// NodeHandler enqueues the pools a node belongs to (pools.Of), before and
// after a change, so a node that moves between pools is looked at by both:
// one relabelled, and one whose maintenance ended, which leaves the pool
// that admitted it for the pool its labels put it in.
func NodeHandler(c client.Reader) handler.TypedEventHandler[client.Object, reconcile.Request] {
	add := func(ctx context.Context, q enqueue.Queue, nodes ...client.Object) {
		var poolList v1alpha1.MaintenancePoolList
		if err := c.List(ctx, &poolList); err != nil {
			// The cache cannot fail a list of a synced informer; should it,
			// the default pool and a node's admitting pool are still
			// enqueued.
			ctrl.LoggerFrom(ctx).Error(err, "List pools for a node event")
		}
		selectors := pools.Selectors(poolList.Items)
		seen := map[string]bool{}
		for _, obj := range nodes {
			node, ok := obj.(*corev1.Node)
			if !ok {
				continue
			}
			a, uid := protocol.InFlightPool(node)
			names := pools.OfInFlight(node, selectors, a, uid)
			if a != "" && !slices.Contains(names, a) {
				// A selection that does not know the pool (a list that
				// failed): its pool looks for itself.
				names = append(names, a)
			}
			for _, name := range names {
				if !seen[name] {
					seen[name] = true
					q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
				}
			}
		}
	}
	return enqueue.Objects(add)
}

// PoolAndDefault enqueues a changed pool and the default pool, whose nodes
// are whatever the other pools leave.
func PoolAndDefault(_ context.Context, obj client.Object) []reconcile.Request {
	reqs := []reconcile.Request{{NamespacedName: types.NamespacedName{Name: obj.GetName()}}}
	if obj.GetName() != v1alpha1.DefaultPoolName {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: v1alpha1.DefaultPoolName}})
	}
	return reqs
}

// NodeChanged passes node updates that can change what a pool controller
// reads of a node: its protocol (annotations, boot, readiness) and its
// labels, which choose its pool; and, with taints, its taints, a drain's
// business. It drops the kubelet's heartbeats, which would otherwise
// reconcile every pool every few seconds per node.
func NodeChanged(taints bool) predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldNode, okOld := e.ObjectOld.(*corev1.Node)
			newNode, okNew := e.ObjectNew.(*corev1.Node)
			if !okOld || !okNew {
				return true
			}
			return protocol.Changed(oldNode, newNode) || !maps.Equal(oldNode.Labels, newNode.Labels) ||
				taints && !reflect.DeepEqual(oldNode.Spec.Taints, newNode.Spec.Taints)
		},
	}
}

// ReleaseReplaced tells kept of every Node object the cache lets go of,
// replaced by a newer version or deleted (Kept.Replaced), so that what a
// controller keeps between reconciles does not keep old versions of nodes
// alive. It enqueues nothing, and sees every change, the kubelet's
// heartbeats too: each replaces the object.
func ReleaseReplaced(kept interface{ Replaced(*corev1.Node) }) handler.TypedEventHandler[client.Object, reconcile.Request] {
	release := func(obj client.Object) {
		if node, ok := obj.(*corev1.Node); ok {
			kept.Replaced(node)
		}
	}
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			release(e.ObjectOld)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			release(e.Object)
		},
	}
}

// NodeTracker is what TrackNodes tells of every change of a Node in the
// cache (KeptPools, Kept).
type NodeTracker interface {
	Added(*corev1.Node)
	Replaced(old *corev1.Node)
}

// TrackNodes tells kept of every Node the cache adds, replaces or drops,
// then seen (nil: none) of its version, and then hands the events that
// changed passes to next. One handler does all three, in that order: a Kept
// that Syncs reads only the nodes it was told of, and a separate handler,
// on a goroutine of its own, might tell it after the reconcile next
// enqueued had run, which would miss the change that caused it; and seen
// names only versions whose changes the Kept was told of.
func TrackNodes(kept NodeTracker, seen *Seen, next handler.TypedEventHandler[client.Object, reconcile.Request], changed predicate.Predicate) handler.TypedEventHandler[client.Object, reconcile.Request] {
	tell := func(obj client.Object, f func(*corev1.Node)) {
		if node, ok := obj.(*corev1.Node); ok {
			f(node)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			tell(e.Object, kept.Added)
			if seen.saw(e.Object); changed.Create(e) {
				next.Create(ctx, e, q)
			}
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			tell(e.ObjectOld, kept.Replaced)
			if seen.saw(e.ObjectNew); changed.Update(e) {
				next.Update(ctx, e, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			tell(e.Object, kept.Replaced)
			if seen.saw(e.Object); changed.Delete(e) {
				next.Delete(ctx, e, q)
			}
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if changed.Generic(e) {
				next.Generic(ctx, e, q)
			}
		},
	}
}
