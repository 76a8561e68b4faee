package maintenance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/enqueue"
	"github.com/kmaint/kmaint/operator/index"
	"github.com/kmaint/kmaint/operator/metrics"
)

// Reconciler moves the NodeMaintenances of one node per reconcile: the node's
// name is the key, so a request for a node that does not exist is handled
// like any other.
type Reconciler struct {
	client.Client
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	// Metrics records phase changes; nil records nothing.
	Metrics *metrics.Recorder

	// warned is, per node and reason, what the last warning about the
	// node's requests said (firstWarning), so that a flood of requests is
	// one event, not one per write.
	warnedMu sync.Mutex
	warned   map[string]string
	// writes are the NodeMaintenances this controller wrote that its cache
	// may not show yet.
	writes *written
}

// +kubebuilder:rbac:groups=kmaint.io,resources=nodemaintenances,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=kmaint.io,resources=nodemaintenances/status,verbs=get;patch;update
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=kmaint.io,resources=maintenancepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=kmaint.io,resources=rebootpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=kmaint.io,resources=maintenancegates,verbs=get;list;watch

// Reconcile records the node's unrecorded requests and advances each of its
// NodeMaintenances, one status patch per object that changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("node", req.Name))
	node := &corev1.Node{}
	if err := r.Get(ctx, req.NamespacedName, node); apierrors.IsNotFound(err) {
		node = nil
	} else if err != nil {
		return ctrl.Result{}, fmt.Errorf("get node %s: %w", req.Name, err)
	}
	var list v1alpha1.NodeMaintenanceList
	if err := r.List(ctx, &list, client.MatchingFields{index.NodeName: req.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list maintenances of node %s: %w", req.Name, err)
	}
	items := r.writes.overlay(req.Name, list.Items, r.Clock.Now())
	slices.SortFunc(items, byAge)

	// Observe: the node as the protocol reads it (nil when it does not
	// exist), and why its raised requests wait.
	var state *protocol.NodeState
	if node != nil {
		st, _ := protocol.Read(node)
		state = &st
	}
	now := r.Clock.Now()
	errs := []error{r.record(ctx, state, items), r.reportSuspect(ctx, state, items, now)}
	w, err := r.waitFor(ctx, state, items, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Decide and act, one NodeMaintenance at a time.
	pool := r.poolOf(ctx, node)
	g, err := r.guardOf(ctx, node, state)
	if err != nil {
		return ctrl.Result{}, err
	}
	var lookAgain time.Time
	for i := range items {
		held, err := r.act(ctx, &items[i], state, olderOpen(items, i), w, pool, g)
		errs = append(errs, err)
		lookAgain = earliest(lookAgain, held)
	}
	errs = append(errs, r.offerAPIRequests(ctx, node, state, items))
	// Windows open with time, not with events: look again when they do.
	if (w.reason == v1alpha1.OutsideWindowReason || w.reason == v1alpha1.FrozenReason || w.reason == v1alpha1.DrainRetryBackoffReason) && !w.next.IsZero() {
		lookAgain = earliest(lookAgain, w.next)
	}
	var result ctrl.Result
	if !lookAgain.IsZero() {
		result.RequeueAfter = max(lookAgain.Sub(now), time.Second)
	}
	return result, errors.Join(errs...)
}

func byAge(a, b v1alpha1.NodeMaintenance) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// olderOpen names the oldest open NodeMaintenance that started in the API
// and is older than items[i], when items[i] started in the API too. Requests
// recorded from the node are never duplicates: the one reboot satisfies all.
func olderOpen(items []v1alpha1.NodeMaintenance, i int) string {
	if items[i].Spec.Source.RaisedOnNode() {
		return ""
	}
	for _, nm := range items[:i] {
		if !nm.Spec.Source.RaisedOnNode() && !nm.Status.Phase.Done() {
			return nm.Name
		}
	}
	return ""
}

// earliest returns the earlier of two times, ignoring zeros.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// act decides where one NodeMaintenance is and patches its status to where
// its node says it is. A write held back (see holdUntil) returns when to
// look again.
func (r *Reconciler) act(ctx context.Context, nm *v1alpha1.NodeMaintenance, f *protocol.NodeState, older string, w waiting, pool func() string, g guard) (time.Time, error) {
	if nm.Status.Phase.Done() {
		return time.Time{}, nil
	}
	now := r.Clock.Now()
	base := nm.DeepCopy()
	v := decide(nm, nm.RequestID(), f, older, w, g)
	if until := holdUntil(base.Status, v, now); !until.IsZero() {
		return until, nil
	}
	nm.Status.RequestID = nm.RequestID()
	apply(&nm.Status, v, now)
	recordHookTimes(&nm.Status, hookStretches(v.bootIDBefore, f), now)
	if equality.Semantic.DeepEqual(base.Status, nm.Status) {
		return time.Time{}, nil
	}
	// The lock makes a write computed from a stale cached copy fail and
	// retry, rather than stamp a phase twice or step back.
	if err := r.Status().Patch(ctx, nm, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			r.writes.forget(nm.Spec.NodeName, nm.Name)
		}
		return time.Time{}, fmt.Errorf("patch status of maintenance %s: %w", nm.Name, err)
	}
	r.writes.remember(nm, now)
	r.count(base, nm, pool)
	// A forced drain is told once, whenever the controller first sees it.
	if v.forced != "" && !meta.IsStatusConditionTrue(base.Status.Conditions, v1alpha1.DrainForcedCondition) {
		r.Recorder.Eventf(nm, nil, corev1.EventTypeWarning, v1alpha1.DrainForcedReason, "Drain", "%s", v.forced)
	}
	if v.health.reason == v1alpha1.HealthCheckFailedReason && !failedHealth(base) {
		r.Recorder.Eventf(nm, nil, corev1.EventTypeWarning, v1alpha1.HealthCheckFailedReason, "Check", "%s", nm.Status.Message)
	}
	if base.Status.Phase != nm.Status.Phase {
		ctrl.LoggerFrom(ctx).Info("Maintenance phase changed", "maintenance", nm.Name, "from", base.Status.Phase, "to", nm.Status.Phase)
		switch nm.Status.Phase {
		case v1alpha1.PhaseFailed:
			r.Recorder.Eventf(nm, nil, corev1.EventTypeWarning, v.reason, "Fail", "%s", nm.Status.Message)
		case v1alpha1.PhaseSucceeded:
			if v.degradedReason == v1alpha1.DaemonMissingReason {
				r.Recorder.Eventf(nm, nil, corev1.EventTypeWarning, v1alpha1.DaemonMissingReason, "Complete", "%s", nm.Status.Message)
			}
		}
		// The steps of a reboot that goes well (admitted, draining,
		// approved, rebooting, settling, succeeded) get no event here:
		// status.phaseTimes keeps when each came, its Succeeded condition
		// says how it ended, and the gate tells them on the Node, where a
		// person looks (RebootCompleted). An event per step was most of the
		// operator's writes in a large rollout. What went wrong is told
		// here too.
	}
	return time.Time{}, nil
}

// failedHealth reports whether the request says its node failed a health
// check already.
func failedHealth(nm *v1alpha1.NodeMaintenance) bool {
	c := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.HealthyCondition)
	return c != nil && c.Reason == v1alpha1.HealthCheckFailedReason
}

// SetupWithManager registers the controller. It finds NodeMaintenances
// through the indexes of package index, which the manager must have.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.writes = newWritten()
	return enqueue.Register(ctrl.NewControllerManagedBy(mgr).Named("maintenance").WithOptions(opts), r.watches()).Complete(r)
}

// watches are the controller's watches.
func (r *Reconciler) watches() []enqueue.Watch {
	return []enqueue.Watch{
		{Object: &v1alpha1.NodeMaintenance{}, Handler: handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			nm := o.(*v1alpha1.NodeMaintenance)
			if nm.Unreadable() != nil {
				return nil // its node is unknown; package unreadable reports it
			}
			// The cache holds nm now: a copy of an older write of it is
			// done with.
			r.writes.seen(nm)
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: nm.Spec.NodeName}}}
		})},
		{Object: &corev1.Node{}, Handler: &handler.EnqueueRequestForObject{}, Predicates: []predicate.Predicate{protocolChanged()}},
		{Object: &v1alpha1.MaintenancePool{}, Handler: r.poolHandler(), Predicates: []predicate.Predicate{poolChanged()}},
		{Object: &v1alpha1.RebootPolicy{}, Handler: handler.EnqueueRequestsFromMapFunc(r.policyNodes),
			Predicates: []predicate.Predicate{predicate.GenerationChangedPredicate{}}},
		{Object: &v1alpha1.MaintenanceGate{}, Handler: handler.EnqueueRequestsFromMapFunc(r.gateNodes)},
	}
}

// protocolChanged passes node changes that can move a NodeMaintenance.
func protocolChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*corev1.Node)
			n, okNew := e.ObjectNew.(*corev1.Node)
			if !okOld || !okNew {
				return true
			}
			return protocol.Changed(o, n)
		},
	}
}
