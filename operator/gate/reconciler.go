package gate

import (
	"context"
	"errors"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/operator/enqueue"
	"github.com/kmaint/kmaint/operator/gate/drainstep"
	"github.com/kmaint/kmaint/operator/gate/members"
	"github.com/kmaint/kmaint/operator/gate/plan"
	"github.com/kmaint/kmaint/operator/gate/podcheck"
	"github.com/kmaint/kmaint/operator/gate/requestsettings"
	"github.com/kmaint/kmaint/operator/hooks"
	"github.com/kmaint/kmaint/operator/objectcheck"
	"github.com/kmaint/kmaint/operator/poolnodes"
	"github.com/kmaint/kmaint/operator/poolstatus"
	"github.com/kmaint/kmaint/operator/recent"
)

var _ Drainer = (*drain.Drainer)(nil)

// +kubebuilder:rbac:groups=kmaint.io,resources=maintenancepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=kmaint.io,resources=maintenancepools/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=kmaint.io,resources=rebootpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=kmaint.io,resources=nodemaintenances,verbs=get;list;watch
// +kubebuilder:rbac:groups=kmaint.io,resources=maintenancegates,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups=apps,resources=daemonsets;statefulsets;replicasets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=batch,namespace=kmaint-hooks,resources=jobs,verbs=get;list;watch;create;delete

// Reconcile runs the gate's phases for one pool and patches its status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, reterr error) {
	pool, err := r.getPool(ctx, req.Name)
	if err != nil || pool == nil {
		if pool == nil && err == nil {
			r.kept.Forget(req.Name)
			r.members.Forget(req.Name)
			r.relabels.forgetPool(req.Name)
		}
		return ctrl.Result{}, err
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("pool", pool.Name))
	r.Metrics.InitPool(pool.Name)

	st, err := r.observe(ctx, pool)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		// The built-in default pool has no object to report on, and a pool
		// that cannot be read is never written back (package unreadable
		// reports it).
		if pool.UID == "" || pool.Unreadable() != nil {
			return
		}
		wait, err := r.status.Write(ctx, pool, func(last *v1alpha1.MaintenancePoolStatus) { r.setStatus(ctx, st, last) })
		reterr = errors.Join(reterr, err)
		if wait > 0 && (result.RequeueAfter == 0 || wait < result.RequeueAfter) {
			result.RequeueAfter = wait
		}
	}()
	if st.selectorErr != nil {
		r.decide(ctx, st) // the hold, for the status; nothing to do until the spec changes
		return ctrl.Result{}, nil
	}
	if len(st.unreadablePools) > 0 {
		return ctrl.Result{}, r.holdForUnreadable(ctx, st)
	}

	r.tellRelabelled(ctx, st)
	// Releasing frees slots that admitting fills at once, and a node just
	// admitted starts draining in the same pass.
	errs := []error{
		r.syncDesiredConfig(ctx, st),
		r.releaseVoid(ctx, st),
		r.releaseOptedOut(ctx, st),
		r.admit(ctx, st),
		r.syncHeld(ctx, st),
	}
	requeue, err := r.drain(ctx, st)
	errs = append(errs, err)
	// What changes with time alone (a window opening, a blocking query's
	// answer going stale, a settle time ending) wakes the pool: the phases
	// ask for it (wakeAt). A cache found behind is looked at again in a
	// moment.
	if st.freshness.behind != "" {
		st.wakeAt(st.now.Add(cacheBehindRetry))
	}
	if !st.wake.IsZero() {
		if wait := max(st.wake.Sub(st.now), time.Second); requeue == 0 || wait < requeue {
			requeue = wait
		}
	}
	return ctrl.Result{RequeueAfter: requeue}, errors.Join(errs...)
}

// holdForUnreadable is the whole reconcile while a MaintenancePool cannot
// be read. Its selector is unknown, so any node may be its own, and what
// this pool sees as its nodes may not be: the gate admits nothing, steps no
// drain (another pool's drain options could evict what this one's keep),
// approves nothing and writes no desired config. It still releases
// admissions that stand for nothing, which needs no pool (aftercare
// completes the reboots that are done, as it does meanwhile). Every readable pool's Blocked
// condition names the unreadable one, and package unreadable reports it on
// the pool itself.
func (r *Reconciler) holdForUnreadable(ctx context.Context, st *poolState) error {
	err := r.releaseVoid(ctx, st)
	r.decide(ctx, st) // held: it asks nothing and admits nothing
	for _, v := range st.views {
		if v.Draining() {
			r.steps.Stop(v.Node.Name)
			st.drains[v.Node.Name] = drainstep.Report{Blocked: true, Message: "held: " + strings.Join(st.unreadablePools, "; ")}
		}
	}
	return err
}

// SetupWithManager registers the gate with the manager. Node changes that
// matter to the protocol and pool spec changes trigger reconciles; nothing
// polls, except a drain in progress and a wait for a daemon or a node's
// return, which requeue themselves.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.ObjectChecks == nil {
		c, err := objectcheck.NewCompiler(objectcheck.Limits{})
		if err != nil {
			return err
		}
		r.ObjectChecks = c
	}
	r.prepare(mgr.GetCache(), mgr.GetAPIReader())
	b := enqueue.Register(ctrl.NewControllerManagedBy(mgr).Named("gate").WithOptions(opts), r.watches()).
		// Each drain step wakes the pool of its node, and the drain steps
		// run as long as the controller does.
		WatchesRawSource(source.TypedFunc[reconcile.Request](func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			r.steps.Start(ctx, wakePool(q))
			return nil
		}))
	return b.Complete(r)
}

// watches are the gate's watches of the API's kinds.
func (r *Reconciler) watches() []enqueue.Watch {
	w := []enqueue.Watch{
		{Object: &v1alpha1.MaintenancePool{}, Handler: r.poolHandler(),
			Predicates: []predicate.Predicate{predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, readabilityChanged(), haltChanged())}},
		// The kept views learn of every change of a node before the
		// reconcile it causes runs (poolnodes.Kept.Sync).
		{Object: &corev1.Node{}, Handler: poolnodes.TrackNodes(r.kept, r.nodesSeen, poolnodes.NodeHandler(r.Client), poolnodes.NodeChanged(true))},
		{Object: &v1alpha1.NodeMaintenance{}, Handler: handler.EnqueueRequestsFromMapFunc(r.maintenancePools)},
		{Object: &v1alpha1.RebootPolicy{}, Handler: handler.EnqueueRequestsFromMapFunc(r.allPools),
			Predicates: []predicate.Predicate{predicate.GenerationChangedPredicate{}}},
		// The cluster's stop holds every pool, the default pool too.
		{Object: &v1alpha1.MaintenanceGate{}, Handler: handler.EnqueueRequestsFromMapFunc(r.allPools)},
	}
	if r.Hooks.Namespace != "" {
		// A hook's Job that finishes wakes its node's pool.
		w = append(w, enqueue.Watch{Object: &batchv1.Job{}, Handler: handler.EnqueueRequestsFromMapFunc(hooks.JobPool(r.Hooks.Namespace))})
	}
	return w
}

// wakePool is Steps' wake for the gate's workqueue.
func wakePool(q workqueue.TypedRateLimitingInterface[reconcile.Request]) func(string) {
	return func(pool string) {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: pool}})
	}
}

// prepare sets the defaults and what a reconcile needs besides the client:
// the informers whose Node store observe reads in place, and a reader that
// goes to the API server past the cache.
func (r *Reconciler) prepare(informers cache.Informers, apiReader client.Reader) {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.DrainPollInterval == 0 {
		r.DrainPollInterval = 2 * time.Second
	}
	if r.BlockingQueryInterval == 0 {
		r.BlockingQueryInterval = 30 * time.Second
	}
	if r.BlockingPodInterval == 0 {
		r.BlockingPodInterval = 30 * time.Second
	}
	if r.StatusInterval == 0 {
		r.StatusInterval = poolstatus.DefaultInterval
	}
	r.status = poolstatus.NewWriter(r.Client, r.Recorder, r.StatusInterval)
	r.events = poolnodes.Events{Recorder: r.Recorder}
	r.cache = informers
	r.apiReader = apiReader
	r.hooks = hooks.NewRunnerOf(r.Client, apiReader, r.Hooks)
	r.hookTeller = hooks.Teller{Events: r.events, Metrics: r.Metrics}
	if r.Pods == nil {
		r.Pods = apiReader
	}
	r.podChecks = podcheck.New(r.Pods, r.PodsVersions, r.BlockingPodInterval)
	r.objects = &objectcheck.Checker{Compiler: r.ObjectChecks, Reader: r.Pods}
	r.settings = requestsettings.New()
	r.kept = poolnodes.NewKeptPools[member]()
	r.nodesSeen = &poolnodes.Seen{}
	r.members = members.NewPools(plan.KeptOrder())
	r.blocks = recent.New[types.UID, plan.Block]()
	r.inflight = newInflight()
	r.relabels = newRelabels()
	if r.Decoded == nil {
		r.Decoded = poolnodes.NewDecoded()
	}
	r.steps = drain.NewSteps(r.Drainer, r.DrainPollInterval)
}
