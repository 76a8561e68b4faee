package retention

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/history"
	"github.com/kmaint/kmaint/operator/index"
	"github.com/kmaint/kmaint/operator/metrics"
)

// Reconciler prunes one node's finished NodeMaintenances per reconcile; the
// node's name is the key, whether or not the node exists.
type Reconciler struct {
	client.Client
	Clock clock.PassiveClock
	// Keep is how much history is kept.
	Keep Retention
	// Metrics counts what is pruned; nil counts nothing.
	Metrics *metrics.Recorder
	// History, when set, holds the finished NodeMaintenances apart from
	// the cache the controller watches: each node with a history is looked
	// at once it is listed. Nil when the cache holds every record.
	History *history.History
}

// +kubebuilder:rbac:groups=kmaint.io,resources=nodemaintenances,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Reconcile deletes what Plan says of the node's history, and comes back
// when the next record ages out.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var state *protocol.NodeState
	node := &corev1.Node{}
	switch err := r.Get(ctx, req.NamespacedName, node); {
	case err == nil:
		st, _ := protocol.Read(node)
		state = &st
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, fmt.Errorf("get node %s: %w", req.Name, err)
	}
	var list v1alpha1.NodeMaintenanceList
	if err := r.List(ctx, &list, client.MatchingFields{index.NodeName: req.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list maintenances of node %s: %w", req.Name, err)
	}
	now := r.Clock.Now()
	prune, next := Plan(list.Items, state, r.Keep, now)
	var errs []error
	pruned := 0
	for _, nm := range prune {
		// Only the record planned on: not one made again under its name,
		// nor one changed since it was read.
		err := r.Delete(ctx, nm, client.Preconditions{UID: &nm.UID, ResourceVersion: &nm.ResourceVersion})
		switch {
		case err == nil:
			pruned++
		case apierrors.IsNotFound(err):
		case apierrors.IsConflict(err):
			// Changed since the cache saw it; the change brings it back.
		default:
			errs = append(errs, fmt.Errorf("prune maintenance %s: %w", nm.Name, err))
		}
	}
	if pruned > 0 {
		r.Metrics.Pruned(pruned)
		ctrl.LoggerFrom(ctx).Info("Pruned reboot history", "node", req.Name, "deleted", pruned, "kept", len(list.Items)-pruned)
	}
	var result ctrl.Result
	if !next.IsZero() {
		result.RequeueAfter = max(next.Sub(now), time.Second)
	}
	return result, errors.Join(errs...)
}

// SetupWithManager registers the controller when it has anything to prune.
// It looks at a node's history when a NodeMaintenance of the node appears
// (each, when the operator starts) or finishes, and at each node of the
// History once it is listed; records age out by requeue.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if !r.Keep.Enabled() {
		return nil
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("retention").
		WithOptions(opts)
	if r.History != nil {
		b = b.WatchesRawSource(r.historyNodes())
	}
	return b.
		Watches(&v1alpha1.NodeMaintenance{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			nm, ok := o.(*v1alpha1.NodeMaintenance)
			if !ok || nm.Unreadable() != nil {
				return nil // never pruned: whether it is finished cannot be told
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: nm.Spec.NodeName}}}
		}), builder.WithPredicates(finishedOrNew())).
		Complete(r)
}

// historyNodes enqueues each node that has finished records, once the
// History has listed them: the cache the controller watches holds only open
// records, so a node with none would not be looked at until it had one.
func (r *Reconciler) historyNodes() source.Source {
	return source.TypedFunc[reconcile.Request](func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		go func() {
			if err := r.History.WaitForSync(ctx); err != nil {
				return // stopped before the history was listed
			}
			for _, node := range r.History.Nodes() {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: node}})
			}
		}()
		return nil
	})
}

// finishedOrNew passes a NodeMaintenance that appears, whose phase
// changes, or that goes: a finish adds to the history, and can free an
// older record of its protection. The operator's cache watches only open
// records, so it sees a finish as the record's going (the API server sends
// the record as it was before); a request deleted while open goes the same
// way, and costs a look that prunes nothing.
func finishedOrNew() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*v1alpha1.NodeMaintenance)
			n, okNew := e.ObjectNew.(*v1alpha1.NodeMaintenance)
			return !okOld || !okNew || o.Status.Phase != n.Status.Phase
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
