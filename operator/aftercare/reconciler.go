package aftercare

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/operator/cacheread"
	"github.com/kmaint/kmaint/operator/enqueue"
	"github.com/kmaint/kmaint/operator/hooks"
	"github.com/kmaint/kmaint/operator/metrics"
	"github.com/kmaint/kmaint/operator/objectcheck"
	"github.com/kmaint/kmaint/operator/poolnodes"
	"github.com/kmaint/kmaint/operator/recent"
	"github.com/kmaint/kmaint/policies"
)

// Reconciler looks after the nodes of one pool per reconcile from their
// approval on: it bounds the wait for a node that does not come back and
// for a daemon that does not confirm its node's reboot, completes the
// reboots that are done once their afterReboot hooks let them, and settles
// nodes back from their reboot, running the pool's health checks and
// halting the pool when one fails. The built-in default pool reconciles under the name
// "default".
type Reconciler struct {
	client.Client
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	// Metrics records health-check failures; nil records nothing.
	Metrics *metrics.Recorder
	// Prometheus runs pools' health checks. Nil fails the checks of every
	// pool that has some, saying that no Prometheus is configured.
	Prometheus policies.Querier
	// ObjectChecks compiles the pools' object checks; the gate may share
	// it. Nil makes one.
	ObjectChecks *objectcheck.Compiler
	// Pods lists a node's failed daemon pods; it must not be a cached
	// client (a cluster-wide pod cache is what it avoids). Nil uses the
	// manager's API reader.
	Pods client.Reader
	// DaemonConfirmTimeout is how long a node may be back from its approved
	// reboot (Ready, new boot ID) without its daemon confirming it, before
	// the reboot is completed without the daemon and the daemon reported
	// missing (10m if zero).
	DaemonConfirmTimeout time.Duration
	// NodeReturnTimeout is how long a node approved to reboot may take to
	// come back (a new boot ID, Ready) before it is reported not back; it
	// keeps its slot either way (15m if zero).
	NodeReturnTimeout time.Duration
	// Decoded keeps the nodes' decoded protocol states between reconciles;
	// the gate may share it. Nil makes one.
	Decoded *poolnodes.Decoded
	// Hooks say where the pools' afterReboot Job hooks run; an empty
	// namespace runs none, and a Job hook then fails as one that cannot
	// start (as the gate's do).
	Hooks hooks.JobSettings

	events poolnodes.Events
	// hooks runs the pools' afterReboot hooks through their kinds;
	// hookTeller tells what happened to them.
	hooks      *hooks.Runner
	hookTeller hooks.Teller
	// kept keeps each pool's members between reconciles.
	kept *poolnodes.KeptPools[poolnodes.Member]
	// objects evaluates the pools' health object checks, reading through
	// Pods.
	objects *objectcheck.Checker
	// healthChecks keeps each pool's last health-check evaluation, by UID.
	healthChecks *recent.Cache[types.UID, healthResult]
	// backSightings keeps, per node, when it was first seen back from its
	// approved reboot without its daemon, until the wait is written.
	backSightings *recent.Cache[string, backSighting]
	// clearedDaemonPods keeps, per node, the boot whose failed daemon pods
	// were deleted.
	clearedDaemonPods *recent.Cache[string, clearedDaemonPods]
	// looked are the pools this controller has observed (see
	// daemonWaitGrace).
	looked *lookedPools
	// cache is the manager's cache, whose Nodes are read in place.
	cache cache.Informers
}

// +kubebuilder:rbac:groups=kmaint.io,resources=maintenancepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=kmaint.io,resources=maintenancepools/status,verbs=get;patch;update
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=batch,namespace=kmaint-hooks,resources=jobs,verbs=get;list;watch;create;delete

// poolState is one reconcile's picture of a pool's nodes and what the
// phases found.
type poolState struct {
	pool  *v1alpha1.MaintenancePool
	nodes poolnodes.Nodes
	now   time.Time
	// firstLook: this controller never observed the pool before.
	firstLook bool
	// unreadablePools is true while some MaintenancePool cannot be read:
	// which pool a node is in cannot be told, so no node settles and the
	// halt stays as it was (see Reconcile).
	unreadablePools bool
	// guard is what the settle phase found that halts the pool.
	guard guardState
	// wake is when a phase wants the pool reconciled again at the latest,
	// for something that changes with time only; zero when nothing does.
	wake time.Time
}

// Reconcile runs aftercare's phases for one pool: the waits for nodes that
// are not back or whose daemon is, then the settle phase and the pool's
// halt, written to its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	st, err := r.observe(ctx, req.Name)
	if err != nil || st == nil {
		return ctrl.Result{}, err
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("pool", st.pool.Name))
	errs := []error{r.awaitNodes(ctx, st)}
	if !st.unreadablePools {
		errs = append(errs, r.settle(ctx, st), r.writeStatus(ctx, st))
	}
	var result ctrl.Result
	if !st.wake.IsZero() {
		result.RequeueAfter = max(st.wake.Sub(st.now), time.Second)
	}
	return result, errors.Join(errs...)
}

// observe reads the pool and its nodes from the cache; nil for a deleted
// pool, or one whose selector cannot be parsed (the gate reports it, and
// no node is known to be its).
func (r *Reconciler) observe(ctx context.Context, name string) (*poolState, error) {
	pool := &v1alpha1.MaintenancePool{}
	switch err := r.Get(ctx, types.NamespacedName{Name: name}, pool); {
	case apierrors.IsNotFound(err) && name == v1alpha1.DefaultPoolName:
		// The built-in default pool exists without an object.
		pool = &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	case apierrors.IsNotFound(err):
		r.kept.Forget(name)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get pool %s: %w", name, err)
	}
	var poolList v1alpha1.MaintenancePoolList
	if err := r.List(ctx, &poolList); err != nil {
		return nil, fmt.Errorf("list pools: %w", err)
	}
	sel := pools.Selectors(poolList.Items)
	if sel.Err(pool.Name) != nil {
		return nil, nil
	}
	st := &poolState{pool: pool, now: r.Clock.Now(), firstLook: r.looked.first(pool.UID)}
	for i := range poolList.Items {
		st.unreadablePools = st.unreadablePools || poolList.Items[i].Unreadable() != nil
	}
	nodes, err := cacheread.All(ctx, r.cache, &corev1.Node{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	st.nodes = poolnodes.ReadKept(r.kept.Of(pool.Name), r.Decoded, nodes, pool.Name, sel, poolnodes.Capacity(pool, len(nodes)))
	return st, nil
}

// awaitNodes looks after the pool's nodes that are approved: it completes
// those back from their reboot whose daemon confirmed it, and bounds the
// waits for a node that does not come back and for the daemon of one that
// did. A node of another pool is that pool's to look after. They run while
// a MaintenancePool cannot be read: they need no pool but the node's.
func (r *Reconciler) awaitNodes(ctx context.Context, st *poolState) error {
	var errs []error
	for _, m := range st.nodes.Members {
		switch {
		case m.RebootDone():
			errs = append(errs, r.complete(ctx, st, *m))
		case m.AwaitingDaemon():
			errs = append(errs, r.awaitDaemon(ctx, st, *m))
		case m.UnconfirmedStale():
			errs = append(errs, r.forgetUnconfirmed(ctx, st, *m))
		case m.AwaitingReturn():
			errs = append(errs, r.awaitReturn(ctx, st, *m))
		case m.NotBackStale():
			errs = append(errs, r.forgetNotBack(ctx, st, *m))
		}
	}
	return errors.Join(errs...)
}

// patchNode applies a protocol transition to a copy of the node and
// patches the difference, failing with a conflict if the node changed since
// it was read, so that a decision taken on an old copy is never applied.
func (r *Reconciler) patchNode(ctx context.Context, st *poolState, m poolnodes.Member, t protocol.Transition) error {
	node, err := poolnodes.Patch(ctx, r.Client, m.Node, true, t)
	if err != nil {
		return err
	}
	st.replace(node)
	return nil
}

// replace puts a node just written back into the state, so that later
// phases and the status see the write.
func (st *poolState) replace(node *corev1.Node) {
	for i, m := range st.nodes.Members {
		if m.Node.Name == node.Name {
			// A new member: the one read is kept for the next reconcile,
			// with the node the cache holds.
			s, _ := protocol.Read(node)
			st.nodes.Members[i] = &poolnodes.Member{NodeState: s, OtherPools: m.OtherPools}
			return
		}
	}
}

// member returns the pool's node of that name.
func (st *poolState) member(name string) poolnodes.Member {
	for _, m := range st.nodes.Members {
		if m.Node.Name == name {
			return *m
		}
	}
	return poolnodes.Member{}
}

// wakeAt asks for a reconcile at t at the latest; zero asks nothing.
func (st *poolState) wakeAt(t time.Time) {
	if !t.IsZero() && (st.wake.IsZero() || t.Before(st.wake)) {
		st.wake = t
	}
}

// SetupWithManager registers aftercare with the manager. A pool's change
// (its spec, a resume, a status another writer changed) and a node's change
// that matters to the protocol trigger reconciles; the waits and settle
// times requeue themselves.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.ObjectChecks == nil {
		c, err := objectcheck.NewCompiler(objectcheck.Limits{})
		if err != nil {
			return err
		}
		r.ObjectChecks = c
	}
	r.prepare(mgr.GetCache(), mgr.GetAPIReader())
	return enqueue.Register(ctrl.NewControllerManagedBy(mgr).Named("aftercare").WithOptions(opts), r.watches()).Complete(r)
}

// watches are aftercare's watches.
func (r *Reconciler) watches() []enqueue.Watch {
	w := []enqueue.Watch{
		// Every update of a pool, its status too: the gate's first write
		// of the status (its required counts) lets this controller write
		// its part.
		{Object: &v1alpha1.MaintenancePool{}, Handler: handler.EnqueueRequestsFromMapFunc(poolnodes.PoolAndDefault)},
		{Object: &corev1.Node{}, Handler: poolnodes.NodeHandler(r.Client), Predicates: []predicate.Predicate{poolnodes.NodeChanged(false)}},
		{Object: &corev1.Node{}, Handler: poolnodes.ReleaseReplaced(r.kept)},
	}
	if r.Hooks.Namespace != "" {
		// A hook's Job that finishes wakes its node's pool.
		w = append(w, enqueue.Watch{Object: &batchv1.Job{}, Handler: handler.EnqueueRequestsFromMapFunc(hooks.JobPool(r.Hooks.Namespace))})
	}
	return w
}

// prepare sets the defaults and what a reconcile needs besides the client:
// the informers whose Node store it reads in place, and a reader that goes
// to the API server past the cache.
func (r *Reconciler) prepare(informers cache.Informers, apiReader client.Reader) {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.DaemonConfirmTimeout == 0 {
		r.DaemonConfirmTimeout = defaultDaemonConfirmTimeout
	}
	if r.NodeReturnTimeout == 0 {
		r.NodeReturnTimeout = defaultNodeReturnTimeout
	}
	if r.Pods == nil {
		r.Pods = apiReader
	}
	if r.Decoded == nil {
		r.Decoded = poolnodes.NewDecoded()
	}
	r.objects = &objectcheck.Checker{Compiler: r.ObjectChecks, Reader: r.Pods}
	r.events = poolnodes.Events{Recorder: r.Recorder}
	r.hooks = hooks.NewRunnerOf(r.Client, apiReader, r.Hooks)
	r.hookTeller = hooks.Teller{Events: r.events, Metrics: r.Metrics}
	r.kept = poolnodes.NewKeptPools[poolnodes.Member]()
	r.cache = informers
	r.healthChecks = recent.New[types.UID, healthResult]()
	r.backSightings = recent.New[string, backSighting]()
	r.clearedDaemonPods = recent.New[string, clearedDaemonPods]()
	r.looked = newLookedPools()
}
