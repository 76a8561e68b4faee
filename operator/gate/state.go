package gate

// The types a reconcile of the gate works on: what it keeps and reads of a
// pool, and what its phases find. They stand here, below the phases that
// use them, so that the gate's files refer to each other one way only.

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/operator/gate/drainstep"
	"github.com/kmaint/kmaint/operator/gate/members"
	"github.com/kmaint/kmaint/operator/gate/plan"
	"github.com/kmaint/kmaint/operator/gate/podcheck"
	"github.com/kmaint/kmaint/operator/gate/requestsettings"
	"github.com/kmaint/kmaint/operator/gate/view"
	"github.com/kmaint/kmaint/operator/hooks"
	"github.com/kmaint/kmaint/operator/metrics"
	"github.com/kmaint/kmaint/operator/objectcheck"
	"github.com/kmaint/kmaint/operator/poolnodes"
	"github.com/kmaint/kmaint/operator/poolstatus"
	"github.com/kmaint/kmaint/operator/recent"
	"github.com/kmaint/kmaint/policies"
)

// admission is what the pool's admissions depend on in one reconcile, and
// what the gate decided: the planner acts on it and the status reports it,
// so nothing is decided twice.
type admission struct {
	// budget is the pool's maxUnavailable resolved to nodes, once per
	// reconcile; budgetErr says why it cannot be (nothing is admitted then).
	budget    int
	budgetErr error
	// windows are the pool's and its RebootPolicies' windows and freezes
	// at now; nil before observe reads them.
	windows *pools.Windows
	// freeze is what the pool's own freezes say at now (freeze.go).
	freeze policies.FreezeState
	// stop is what the cluster's MaintenanceGate says when it stops every
	// admission; nil when it does not.
	stop *v1alpha1.Stop
	// podSelector is the pool's blockingPodSelector, parsed; nil when it
	// has none. podSelectorErr says why it cannot be parsed.
	podSelector    labels.Selector
	podSelectorErr error

	// hold is the first pool-wide hold (policies.Holds) that holds the
	// pool: nothing is admitted, and it is what Blocked says. Nil when
	// none does.
	hold *verdict
	// block is what the pool's blocking queries said, when they were asked.
	block plan.Block
	// quorum is why a control-plane pool's guard holds its admissions,
	// when it was asked (controlplane.go); empty when it does not.
	quorum string
	// plan is the admission decision, once made.
	plan plan.Plan
	// canaries is, while a rollout's canaries hold waiting nodes, how many
	// passed of how many; nil when they hold none. The pool's status
	// publishes it for the waiting requests.
	canaries *policies.Canaries
}

// verdict is why requests wait: a reason constant of v1alpha1 and its
// message, as a policies.WaitFunc returns them.
type verdict struct {
	reason, message string
}

// freshness is what a reconcile learned of its cache from the API server:
// why the cache is behind (empty when it is not). It is asked at most once
// per reconcile.
type freshness struct {
	asked  bool
	behind string
	// nodes is the newest version of the Nodes the reconcile's views
	// were read after (poolnodes.Seen): an admission or approval records
	// it, so that a node's change after it is known as one the gate could
	// not count.
	nodes string
}

// poolState is one reconcile's picture of a pool: what it read of the
// pool and the cluster, the pool's nodes, and what the phases learned and
// did.
type poolState struct {
	poolRead
	// views are the nodes of the pool the phases read node by node: its
	// active members, and the ordinary ones pulled in this pass (pass.go).
	views []*view.Node
	// members is what the gate keeps of the pool's nodes, as this
	// reconcile reads it: the ordinary members not among the views are
	// counted there, and the ones that wait queued (package members).
	members *members.Pass[view.Kept]
	// admission is what the pool's admissions depend on, and what the
	// gate decided (admission.go).
	admission admission
	// freshness is what the API server said of the cache, asked before
	// the first admission or approval (fresh.go).
	freshness freshness
	// drains holds each draining node's last drain step, by node name.
	drains map[string]drainstep.Report
	// wake is when a phase wants the pool reconciled again at the latest,
	// for something that changes with time only; zero when nothing does.
	wake time.Time
}

// poolRead is what a reconcile read of the pool and the cluster before
// its phases ran, which every phase decides from.
type poolRead struct {
	pool *v1alpha1.MaintenancePool
	now  time.Time
	// unreadablePools say which MaintenancePools cannot be read (this one
	// among them, maybe), and why; while there is one, the gate only
	// completes reboots that are done (see Reconcile).
	unreadablePools []string
	// selection tells which pools nodes are in, and which pools'
	// selectors cannot be parsed; selectorErr says why this pool's cannot
	// be: views then holds the nodes it might select, which no pool admits.
	selection   pools.Selection
	selectorErr error
	// gate is the cluster's MaintenanceGate as the cache had it when the
	// reconcile read its stop (nil: none); freshness compares this one,
	// the one the decisions came from, with the API server's.
	gate *v1alpha1.MaintenanceGate
}

// Drainer evicts a node's pods one step at a time; drain.Drainer is the real
// one.
type Drainer interface {
	drain.Stepper
	// Force deletes what eviction could not move, bypassing
	// PodDisruptionBudgets, calling before with the pods first.
	Force(ctx context.Context, node string, opts v1alpha1.DrainOptions, before func(pods []string) error) ([]string, error)
}

// Reconciler admits, drains, approves and completes reboots, one pool per
// reconcile. The built-in default pool reconciles under the name "default".
type Reconciler struct {
	client.Client
	Drainer  Drainer
	Recorder events.EventRecorder
	Clock    clock.PassiveClock
	// DrainPollInterval is how often a drain in progress is stepped.
	DrainPollInterval time.Duration
	// Metrics records admissions and drains; nil records nothing.
	Metrics *metrics.Recorder
	// Prometheus runs pools' blocking queries. Nil blocks every pool that
	// has some, and says that no Prometheus is configured.
	Prometheus policies.Querier
	// BlockingQueryInterval is how long a pool's blocking-query results
	// stand before the queries run again (30s if zero).
	BlockingQueryInterval time.Duration
	// ObjectChecks compiles the pools' object checks (the gate reports
	// those that cannot be compiled, aftercare's included); aftercare
	// may share it. Nil makes one.
	ObjectChecks *objectcheck.Compiler
	// Pods lists the pods of a node whose turn came, to see whether any
	// holds its admission; it must not be a cached client (a cluster-wide
	// pod cache is what it avoids). Nil uses the manager's API reader.
	Pods client.Reader
	// EtcdReady asks the API server whether its etcd is ready
	// (/readyz/etcd), for a control-plane pool whose guard finds no etcd
	// member pod; nil answers that it cannot tell (the guard holds).
	EtcdReady func(ctx context.Context) error
	// PodsVersions reads the pods' resource version the pod checks list
	// from, shared with the drains (drain.Drainer's Versions). Nil reads
	// it through Pods.
	PodsVersions *drain.Versions
	// BlockingPodInterval is how long a node its pods hold waits before
	// its pods are looked at again (30s if zero).
	BlockingPodInterval time.Duration
	// Decoded keeps the nodes' decoded protocol states between reconciles;
	// aftercare may share it. Nil makes one.
	Decoded *poolnodes.Decoded
	// StatusInterval is the least time between two writes of a pool's
	// status that change only its counts (1s if zero; see package poolstatus).
	StatusInterval time.Duration
	// Hooks say where the pools' Job hooks run; an empty namespace runs
	// none, and a Job hook then fails as one that cannot start.
	Hooks hooks.JobSettings

	inflight *inflight
	events   poolnodes.Events
	// hooks runs the pools' hooks through their kinds, before the
	// reboot; hookTeller tells what happened to them.
	hooks      *hooks.Runner
	hookTeller hooks.Teller
	// steps steps drains outside the reconcile.
	steps *drain.Steps
	// status writes the pools' status.
	status *poolstatus.Writer
	// blocks keeps each pool's last blocking-query evaluation, by UID.
	blocks *recent.Cache[types.UID, plan.Block]
	// settings keeps what nodes' open NodeMaintenances say of their
	// requests.
	settings *requestsettings.Cache
	// kept keeps each pool's views of its nodes between reconciles.
	kept *poolnodes.KeptPools[member]
	// nodesSeen is the newest version of the Nodes the views were told
	// of; an admission or approval records the one its views were read
	// after.
	nodesSeen *poolnodes.Seen
	// members sorts what kept holds of each pool's nodes into what the
	// phases read node by node, what they count, and the queue.
	members *members.Pools[view.Kept]
	// objects evaluates the pools' blocking object checks, reading
	// through Pods.
	objects *objectcheck.Checker
	// podChecks keeps what nodes' pods said when their turn last came.
	podChecks *podcheck.Checker
	// relabels keeps which relabelled nodes in flight the gate told of.
	relabels *relabels
	// cache is the manager's cache, whose Nodes observe reads in place.
	cache cache.Informers
	// apiReader reads a hook's Job the cache does not have yet.
	apiReader client.Reader
}
