package maintenance

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"github.com/kmaint/kmaint/operator/index"
)

// poolChanged passes pool changes that can change why a request waits: the
// spec, whether the budget is exhausted, or the blocking query that holds
// the pool (whose message a waiting request quotes). The gate rewrites the
// pool's counts on every admission; those alone wake no one.
func poolChanged() predicate.Predicate {
	exhausted := func(p *v1alpha1.MaintenancePool) bool { return p.Status.Unavailable >= p.Status.MaxUnavailable }
	blocking := func(p *v1alpha1.MaintenancePool) v1alpha1.BlockingQueryStatus {
		if b := p.Status.BlockingQuery; b != nil {
			return v1alpha1.BlockingQueryStatus{Name: b.Name, Reason: b.Reason, Message: b.Message}
		}
		return v1alpha1.BlockingQueryStatus{}
	}
	// A halt's reason and message, and the canaries' count, are quoted by
	// the requests that wait for them.
	halt := func(p *v1alpha1.MaintenancePool) string {
		out := ""
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.HaltedCondition); c != nil && c.Status == metav1.ConditionTrue {
			out = c.Reason + "\x00" + c.Message
		}
		if c := p.Status.Canaries; c != nil {
			out += fmt.Sprintf("\x00canaries %d/%d", c.Passed, c.Want)
		}
		return out
	}
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*v1alpha1.MaintenancePool)
			n, okNew := e.ObjectNew.(*v1alpha1.MaintenancePool)
			if !okOld || !okNew || o.Generation != n.Generation || (o.Unreadable() == nil) != (n.Unreadable() == nil) {
				return true
			}
			return exhausted(o) != exhausted(n) || blocking(o) != blocking(n) || halt(o) != halt(n) ||
				o.Status.Settling != n.Status.Settling
		},
	}
}

// poolHandler maps a pool change to the nodes whose waiting requests it
// may concern (see poolNodes), before and after the change.
func (r *Reconciler) poolHandler() handler.TypedEventHandler[client.Object, reconcile.Request] {
	add := func(ctx context.Context, q enqueue.Queue, objs ...client.Object) {
		seen := map[reconcile.Request]bool{}
		for _, obj := range objs {
			for _, req := range r.poolNodes(ctx, obj) {
				if !seen[req] {
					seen[req] = true
					q.Add(req)
				}
			}
		}
	}
	return enqueue.Objects(add)
}

// poolNodes maps a pool to the nodes it selects that have a Requested
// NodeMaintenance: only those show why they wait. Nodes that wait because
// of a conflict, a selector that cannot be parsed or a pool that cannot be
// read are mapped too, whatever their pools: a pool's new selector may have
// ended that, and the pool it selected them for no longer names them. A
// pool that cannot be read holds every pool, so it maps to all of them.
func (r *Reconciler) poolNodes(ctx context.Context, obj client.Object) []reconcile.Request {
	var list v1alpha1.NodeMaintenanceList
	if err := r.List(ctx, &list, client.MatchingFields{index.State: index.Open}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List maintenances for a pool event")
		return nil
	}
	p, _ := obj.(*v1alpha1.MaintenancePool)
	all := p != nil && p.Unreadable() != nil
	var poolList v1alpha1.MaintenancePoolList
	if err := r.List(ctx, &poolList); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List pools for a pool event")
		return nil
	}
	selectors := pools.Selectors(poolList.Items)
	var reqs []reconcile.Request
	seen := map[string]bool{}
	for _, nm := range list.Items {
		name := nm.Spec.NodeName
		if nm.Status.Phase != v1alpha1.PhaseRequested || seen[name] {
			continue
		}
		seen[name] = true
		node := &corev1.Node{}
		if err := r.Get(ctx, types.NamespacedName{Name: name}, node); err != nil {
			continue
		}
		if all || slices.Contains(pools.Of(node, selectors), obj.GetName()) || waitsForPools(&nm) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
		}
	}
	return reqs
}

// gateNodes maps the cluster's MaintenanceGate to every node with a
// Requested NodeMaintenance: its stop holds them all.
func (r *Reconciler) gateNodes(ctx context.Context, _ client.Object) []reconcile.Request {
	var list v1alpha1.NodeMaintenanceList
	if err := r.List(ctx, &list, client.MatchingFields{index.State: index.Open}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List maintenances for a MaintenanceGate event")
		return nil
	}
	var reqs []reconcile.Request
	seen := map[string]bool{}
	for _, nm := range list.Items {
		if nm.Status.Phase != v1alpha1.PhaseRequested || seen[nm.Spec.NodeName] {
			continue
		}
		seen[nm.Spec.NodeName] = true
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: nm.Spec.NodeName}})
	}
	return reqs
}

// policyNodes maps a RebootPolicy to the nodes of its open NodeMaintenances,
// whose windows it may have changed.
func (r *Reconciler) policyNodes(ctx context.Context, obj client.Object) []reconcile.Request {
	var list v1alpha1.NodeMaintenanceList
	if err := r.List(ctx, &list, client.MatchingFields{index.State: index.Open}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List maintenances for a policy event")
		return nil
	}
	var reqs []reconcile.Request
	seen := map[string]bool{}
	for _, nm := range list.Items {
		if nm.Spec.Policy != obj.GetName() || nm.Status.Phase.Done() || seen[nm.Spec.NodeName] {
			continue
		}
		seen[nm.Spec.NodeName] = true
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: nm.Spec.NodeName}})
	}
	return reqs
}

// waitsForPools reports whether a NodeMaintenance waits because more than
// one pool selects, or might select, its node.
func waitsForPools(nm *v1alpha1.NodeMaintenance) bool {
	c := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.WaitingCondition)
	return c != nil && (c.Reason == v1alpha1.ConflictingReason || c.Reason == v1alpha1.InvalidSelectorReason ||
		c.Reason == v1alpha1.UnreadablePoolReason)
}
