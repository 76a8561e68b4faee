package gate

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/operator/enqueue"
	"github.com/kmaint/kmaint/operator/poolnodes"
)

// poolHandler enqueues a changed pool and the default pool; and every pool
// when the event may move nodes between pools (movesNodes), or when the
// pool cannot be read, or could not before the change: each pool's Blocked
// condition names the unreadable ones, and none admits while there is one.
func (r *Reconciler) poolHandler() handler.TypedEventHandler[client.Object, reconcile.Request] {
	add := func(ctx context.Context, q enqueue.Queue, objs ...client.Object) {
		reqs := poolnodes.PoolAndDefault(ctx, objs[len(objs)-1])
		if movesNodes(objs) {
			reqs = r.allPools(ctx, objs[0])
		}
		for _, req := range reqs {
			q.Add(req)
		}
	}
	return enqueue.Objects(add)
}

// movesNodes reports whether a pool's event may move nodes between any
// pools: a pool made or deleted (the nodes in flight a deleted pool
// admitted go to the pools their labels name), one whose selector changed,
// or one that cannot be read, or can again.
func movesNodes(objs []client.Object) bool {
	if len(objs) == 1 {
		return true
	}
	o, okOld := objs[0].(*v1alpha1.MaintenancePool)
	n, okNew := objs[1].(*v1alpha1.MaintenancePool)
	return !okOld || !okNew || o.Unreadable() != nil || n.Unreadable() != nil ||
		!equality.Semantic.DeepEqual(o.Spec.NodeSelector, n.Spec.NodeSelector)
}

// readabilityChanged passes a pool update that makes it readable or
// unreadable, which a new CRD version can do without a new generation.
func readabilityChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*v1alpha1.MaintenancePool)
			n, okNew := e.ObjectNew.(*v1alpha1.MaintenancePool)
			return !okOld || !okNew || (o.Unreadable() == nil) != (n.Unreadable() == nil)
		},
	}
}

// maintenancePools maps a NodeMaintenance to its node's pools: a request
// that may ignore windows, or that its policy's windows hold, changes what
// the gate may admit. One that cannot be read names no node, and holds its
// request wherever it is: every pool looks again.
func (r *Reconciler) maintenancePools(ctx context.Context, obj client.Object) []reconcile.Request {
	nm, ok := obj.(*v1alpha1.NodeMaintenance)
	if !ok {
		return nil
	}
	if nm.Unreadable() != nil {
		r.settings.Changed("")
		r.kept.Changed("")
		return r.allPools(ctx, obj)
	}
	// What is kept of the node's requests is found again (the cache holds
	// the change already: it tells its handlers after).
	r.settings.Changed(nm.Spec.NodeName)
	r.kept.Changed(nm.Spec.NodeName)
	node := &corev1.Node{}
	if err := r.Get(ctx, types.NamespacedName{Name: nm.Spec.NodeName}, node); err != nil {
		return nil // no node, no pool to wake
	}
	var poolList v1alpha1.MaintenancePoolList
	if err := r.List(ctx, &poolList); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List pools for a maintenance event")
	}
	var reqs []reconcile.Request
	for _, name := range pools.Of(node, pools.Selectors(poolList.Items)) {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
	return reqs
}

// allPools maps a RebootPolicy change to every pool and the default pool:
// a policy's windows apply to its requests wherever their nodes are, and
// pools are few, so working out which pools hold them is not worth it.
func (r *Reconciler) allPools(ctx context.Context, _ client.Object) []reconcile.Request {
	var poolList v1alpha1.MaintenancePoolList
	if err := r.List(ctx, &poolList); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List pools for a policy event")
	}
	reqs := []reconcile.Request{{NamespacedName: types.NamespacedName{Name: v1alpha1.DefaultPoolName}}}
	for _, p := range poolList.Items {
		if p.Name != v1alpha1.DefaultPoolName {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
		}
	}
	return reqs
}
