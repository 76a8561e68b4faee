package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DefaultPoolName names the built-in pool of nodes that no MaintenancePool
// selects. A MaintenancePool of this name configures that pool and reports its
// status; without one the built-in pool admits one node at a time.
const DefaultPoolName = "default"

// MaintenancePoolSpec is what a pool of nodes allows.
type MaintenancePoolSpec struct {
	// NodeSelector selects the pool's nodes. It is required, except on the
	// pool named "default", which takes every node that no other pool selects.
	// A node selected by two pools is reported by both and admitted by neither.
	// +optional
	NodeSelector *LabelSelector `json:"nodeSelector,omitempty"`

	// MaxUnavailable is how many of the pool's nodes may be unavailable at
	// once: approved, draining, rebooting, not Ready or unschedulable for any
	// reason. An integer, or a percentage of the pool's nodes rounded down but
	// at least 1 (unless it is 0 or 0%). 0 admits nothing.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="maxUnavailable must be an integer >= 0 or a percentage from 0% to 100%"
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self <= 1000000",message="maxUnavailable must be at most 1000000 nodes; 100% means every node"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// Windows limit when reboots may start. With none, any time will do; with
	// several, a reboot may start while any one of them is open.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Windows []MaintenanceWindow `json:"windows,omitempty"`

	// Paused stops new admissions. Nodes already admitted finish.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// DesiredConfig is the config identity the pool's nodes should run, e.g. an
	// OS image version. Changing it rolls a reboot through the pool: each
	// node's daemon requests a reboot until its current config matches.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.:+]*[A-Za-z0-9])?$`
	// +optional
	DesiredConfig string `json:"desiredConfig,omitempty"`

	// BlockingQueries are checks that stop new admissions while any of
	// them blocks or fails: PromQL queries that return a result, and object
	// checks whose expression is false.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	BlockingQueries []BlockingQuery `json:"blockingQueries,omitempty"`

	// BlockingPodSelector keeps a node from being admitted while a pod on
	// it (in any namespace, not Succeeded or Failed) matches this label
	// selector, as kured's --blocking-pod-selector does. The node's turn
	// passes to the next waiting node; it is looked at again until no pod
	// matches. It must say something: an empty selector would match every
	// pod, kmaint's own daemon included, and no node would ever reboot.
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="blockingPodSelector must have at least one matchLabels entry or matchExpressions requirement: an empty selector matches every pod, kmaint's daemon included, so no node would ever reboot"
	// +optional
	BlockingPodSelector *LabelSelector `json:"blockingPodSelector,omitempty"`

	// PodOptOuts bounds what pods can hold: the namespaces whose pods'
	// do-not-disrupt annotations and blockingPodSelector matches hold their
	// node, and for how long. Unset, a pod of any namespace holds its node
	// for as long as it says, as under kured and Karpenter.
	// +optional
	PodOptOuts *PodOptOuts `json:"podOptOuts,omitempty"`

	// Drain says how admitted nodes are drained before they reboot.
	// The empty default lets the API server fill in drain's own defaults
	// (timeout) when a pool leaves drain out altogether.
	// +kubebuilder:default={}
	// +optional
	Drain DrainOptions `json:"drain,omitempty"`

	// NodeMarking is the labels and taints kmaint puts on a node around its
	// reboot (kured's --pre-reboot-node-labels and
	// --post-reboot-node-labels).
	// +optional
	NodeMarking *NodeMarking `json:"nodeMarking,omitempty"`

	// SettleTime is how long a rebooted node keeps its slot in the budget
	// once it is back (a new boot ID, Ready), uncordoned and in service,
	// before the next node may have it (kured's --lock-release-delay). A
	// node that goes NotReady meanwhile starts it again. With
	// healthChecks, the node must also pass them all the while. Unset or
	// 0 frees the slot when the node is back; at most 24h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('24h')",message="settleTime must be a Go duration from 0s to 24h"
	// +optional
	SettleTime *metav1.Duration `json:"settleTime,omitempty"`

	// HealthChecks are checks (PromQL queries or object checks) a rebooted node must pass during and
	// after its settle time. A node that fails one keeps its slot, and the
	// pool halts: it admits nothing new until healthChecks.resume says.
	// A check that cannot be run (Prometheus unreachable, the query
	// refused) passes no node, and holds admissions until it runs.
	// +optional
	HealthChecks *HealthChecks `json:"healthChecks,omitempty"`

	// Freezes are periods in which the pool admits nothing new, whatever
	// its windows say: absolute (a shopping season) or recurring (every
	// Friday). A request passes them only with ignoreFreezes.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	// +optional
	Freezes []FreezePeriod `json:"freezes,omitempty"`

	// Hooks are the work around each node's reboot: before its drain,
	// before its reboot and after it, each an acknowledgement another
	// controller writes or a Job kmaint runs on the node. Whoever may edit
	// them may run privileged pods on the pool's nodes.
	// +optional
	Hooks *Hooks `json:"hooks,omitempty"`

	// Silences are the Alertmanager silences kmaint holds for each node of
	// the pool in flight, from its admission (before its cordon) until it
	// is done (completed and settled) or released, so that a planned reboot
	// pages no one. Whoever may edit them may silence, for that time, the
	// alerts their matchers select; each set must select by the node.
	// +optional
	Silences *Silences `json:"silences,omitempty"`

	// ControlPlane guards a pool of control-plane nodes: one node in
	// flight at a time whatever maxUnavailable says, admitted and approved
	// only while every etcd member is healthy and no other node of the
	// pool is NotReady, cordoned or in flight (reason QuorumAtRisk).
	// +optional
	ControlPlane *ControlPlaneGuard `json:"controlPlane,omitempty"`
}

// Settle returns spec.settleTime, 0 when unset, within bounds.
func (s *MaintenancePoolSpec) Settle() time.Duration {
	if s.SettleTime == nil || s.SettleTime.Duration <= 0 {
		return 0
	}
	return min(s.SettleTime.Duration, MaxSettleTime)
}

// Guarded reports whether a rebooted node of the pool keeps its slot after
// it is back: it has a settle time or health checks.
func (s *MaintenancePoolSpec) Guarded() bool {
	return s.Settle() > 0 || s.HealthChecks != nil && len(s.HealthChecks.Queries) > 0
}

// BlockingQuery is a check that blocks new admissions in its pool: either
// a PromQL query whose result, while non-empty, blocks, or an object check
// (objects and expression) whose CEL expression, while false, blocks. A
// check that cannot be evaluated blocks too.
// +kubebuilder:validation:XValidation:rule="has(self.query) != has(self.objects)",message="a blocking check has exactly one of query (PromQL) or objects (with expression)"
// +kubebuilder:validation:XValidation:rule="has(self.objects) == has(self.expression)",message="expression goes with objects, and objects with expression"
type BlockingQuery struct {
	// Name identifies the query in the pool's conditions and events.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// Query is the PromQL expression, e.g. ALERTS{severity="critical"}.
	// Required unless the check is an object check.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Query string `json:"query,omitempty"`

	// Objects are the objects an object check reads (see CheckObjects):
	// for node and podsOnNode, those of each node whose turn to be
	// admitted came (at most the free slots of the budget); for pods,
	// the pods it selects. The pool admits nothing while the expression
	// is false for any of them.
	// +optional
	Objects *CheckObjects `json:"objects,omitempty"`

	// Expression is the object check's CEL expression (Kubernetes' CEL
	// libraries and cost limits), over the variables its objects give:
	// `node`, `pods`. It must be a bool; true lets admissions through.
	// One that does not compile, costs too much or fails holds them.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Expression string `json:"expression,omitempty"`
}

// DrainOptions says how a node is drained. DaemonSet pods are always left in
// place: their controller would put them straight back.
type DrainOptions struct {
	// Timeout bounds a drain (each attempt, with onTimeout Retry). What
	// happens when a drain has not finished by then is onTimeout's choice.
	// At most 168h (a week).
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="timeout must be a positive Go duration such as 10m"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('168h')",message="timeout must be at most 168h (a week)"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// OnTimeout is what happens to a drain that has not finished within
	// timeout (kured's --drain-timeout with --force-reboot):
	//
	//   - Retry (the default): the node is uncordoned and its marks
	//     removed, its request stays open and waits retry.backoff, then
	//     the node is admitted again, up to retry.maxAttempts drains in
	//     all; the last one that times out ends as Abandon does. Like
	//     kured, which gives up a drain and tries again on its next
	//     period, a request is not lost to a PodDisruptionBudget that
	//     holds for a while (a rollout, a replica starting), and nothing
	//     is ever evicted against a PodDisruptionBudget.
	//   - Abandon: the node is uncordoned and its marks removed, the
	//     request ends Failed (reason DrainTimeout) with the pods that
	//     blocked it, and is not tried again; a new request is.
	//   - Force: the pods eviction could not move (those a
	//     PodDisruptionBudget protects) are deleted, bypassing their
	//     PodDisruptionBudgets, and the node reboots anyway (kured's
	//     --force-reboot). Pods the drain options keep (unmanaged pods
	//     without force, emptyDir data without deleteEmptyDirData) are not
	//     deleted: they go down with the reboot and start again on the
	//     node. Mirror and DaemonSet pods are never touched. Warning events
	//     DrainForced on the node, the pool and the NodeMaintenance name the
	//     pods deleted, as does the NodeMaintenance's DrainForced condition.
	// +kubebuilder:default=Retry
	// +optional
	OnTimeout DrainTimeoutAction `json:"onTimeout,omitempty"`

	// Retry bounds the attempts of onTimeout Retry; unset means 3 attempts,
	// 30m apart.
	// +optional
	Retry *DrainRetry `json:"retry,omitempty"`

	// GracePeriodSeconds overrides each evicted pod's termination grace
	// period. Unset uses the pod's own.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=604800
	// +optional
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`

	// PodSelector limits the drain to pods matching this label selector.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	PodSelector string `json:"podSelector,omitempty"`

	// DeleteEmptyDirData lets the drain evict pods with emptyDir volumes,
	// whose data is lost. Without it such pods block the drain.
	// +optional
	DeleteEmptyDirData bool `json:"deleteEmptyDirData,omitempty"`

	// Force lets the drain evict pods that no controller manages; they are
	// not recreated. Without it such pods block the drain.
	// +optional
	Force bool `json:"force,omitempty"`
}

// DrainTimeoutAction is what happens to a drain that runs past its
// timeout: Retry, Abandon or Force.
// +kubebuilder:validation:Enum=Retry;Abandon;Force
type DrainTimeoutAction string

// The actions at a drain's deadline.
const (
	// DrainRetryAction uncordons the node and admits it again after a
	// backoff, a bounded number of times, then abandons.
	DrainRetryAction DrainTimeoutAction = "Retry"
	// DrainAbandonAction uncordons the node and fails the request.
	DrainAbandonAction DrainTimeoutAction = "Abandon"
	// DrainForceAction deletes the pods eviction could not move and reboots.
	DrainForceAction DrainTimeoutAction = "Force"
)

// DefaultDrainTimeoutAction is onTimeout when a pool leaves it unset, as
// the built-in default pool does.
const DefaultDrainTimeoutAction = DrainRetryAction

// The defaults and bounds of drain.retry.
const (
	DefaultDrainRetryAttempts = 3
	MaxDrainRetryAttempts     = 100
	DefaultDrainRetryBackoff  = 30 * time.Minute
	MaxDrainRetryBackoff      = 24 * time.Hour
)

// DrainRetry bounds the retries of a drain that times out.
type DrainRetry struct {
	// MaxAttempts is how many drains a request gets in all, the first one
	// included, from 1 (the first timeout abandons) to 100.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MaxAttempts int32 `json:"maxAttempts,omitempty"`

	// Backoff is how long the node stays uncordoned, its request waiting,
	// between a drain that timed out and the next admission: from 1s to
	// 24h. The next attempt still waits for the pool's budget, windows and
	// blocking queries like any request.
	// +kubebuilder:default="30m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="backoff must be a Go duration from 1s to 24h"
	// +optional
	Backoff *metav1.Duration `json:"backoff,omitempty"`
}

// TimeoutAction returns onTimeout, or its default when unset.
func (o DrainOptions) TimeoutAction() DrainTimeoutAction {
	if o.OnTimeout == "" {
		return DefaultDrainTimeoutAction
	}
	return o.OnTimeout
}

// RetryLimits returns retry's attempts and backoff, with their defaults
// for what is unset and values out of bounds (stored before the schema
// refused them) brought within them.
func (o DrainOptions) RetryLimits() (attempts int, backoff time.Duration) {
	attempts, backoff = DefaultDrainRetryAttempts, DefaultDrainRetryBackoff
	if o.Retry == nil {
		return attempts, backoff
	}
	if n := int(o.Retry.MaxAttempts); n > 0 {
		attempts = min(n, MaxDrainRetryAttempts)
	}
	if b := o.Retry.Backoff; b != nil && b.Duration > 0 {
		backoff = min(max(b.Duration, time.Second), MaxDrainRetryBackoff)
	}
	return attempts, backoff
}

// MaintenancePoolStatus is what the operator last saw of a pool.
type MaintenancePoolStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Nodes is the number of nodes the pool selects.
	Nodes int32 `json:"nodes"`
	// Ready is the number of those nodes whose Ready condition is True.
	Ready int32 `json:"ready"`
	// Updated is the number of nodes running the pool's desiredConfig (all of
	// them when it is unset).
	Updated int32 `json:"updated"`
	// Unavailable is the number of nodes approved, draining, rebooting, not
	// Ready or unschedulable.
	Unavailable int32 `json:"unavailable"`
	// MaxUnavailable is spec.maxUnavailable resolved against Nodes.
	MaxUnavailable int32 `json:"maxUnavailable"`
	// Draining is the number of nodes admitted and not yet approved.
	Draining int32 `json:"draining"`
	// Rebooting is the number of nodes approved to reboot and not yet back.
	Rebooting int32 `json:"rebooting"`
	// Degraded is the number of nodes whose daemon reports a reboot that did
	// not happen, or whose drain failed in their current boot.
	Degraded int32 `json:"degraded"`
	// Conflicting is the number of nodes that another pool selects too; they
	// are never admitted.
	Conflicting int32 `json:"conflicting"`
	// PendingRequests is the number of nodes that request a reboot and have
	// not been admitted.
	PendingRequests int32 `json:"pendingRequests"`
	// OptedOut is the number of nodes whose requests wait for an opt-out
	// to be lifted: a kmaint.io/do-not-disrupt annotation on the node or
	// one of its pods, or a pod matching blockingPodSelector.
	// +optional
	OptedOut int32 `json:"optedOut"`
	// Settling is the number of nodes back from their reboot that hold
	// their slot for the settle time and the health checks.
	// +optional
	Settling int32 `json:"settling"`
	// AtHooks is the number of nodes that wait at one of the pool's hooks,
	// or whose hook failed: before their drain, before their reboot or
	// after it. Each keeps its slot meanwhile.
	// +optional
	AtHooks int32 `json:"atHooks,omitempty"`

	// Halt is why the pool is halted: the nodes whose health checks
	// failed; absent while none did (or all were resumed).
	// +optional
	Halt *PoolHalt `json:"halt,omitempty"`

	// Freeze is the pool's freeze in force; absent while none is.
	// +optional
	Freeze *ActiveFreeze `json:"freeze,omitempty"`

	// Canaries is, while a desiredConfig rollout's canaries
	// (healthChecks.canaries) hold the pool's waiting nodes, how many have
	// passed; absent otherwise. The gate decides it, and the waiting
	// requests quote it.
	// +optional
	Canaries *CanaryStatus `json:"canaries,omitempty"`

	// Conditions: Blocked, Draining, Degraded, Conflicting, OverBudget,
	// OptedOut, Halted, Frozen.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// BlockingQuery is the blocking query that holds the pool's admissions,
	// as the gate last evaluated it; absent while none does.
	// +optional
	BlockingQuery *BlockingQueryStatus `json:"blockingQuery,omitempty"`
}

// CanaryStatus is how far a rollout's canaries are.
type CanaryStatus struct {
	// Passed is how many nodes run the new config and settled.
	// +kubebuilder:validation:Minimum=0
	Passed int32 `json:"passed"`
	// Want is how many must pass before the rest of the pool goes
	// (healthChecks.canaries).
	// +kubebuilder:validation:Minimum=0
	Want int32 `json:"want"`
}

// BlockingQueryStatus is a blocking query that holds a pool's admissions.
type BlockingQueryStatus struct {
	// Name is the query's name in spec.blockingQueries.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Reason is BlockingQuery (it returns a result, or an object check's
	// expression is false) or, for a check that cannot be evaluated, which
	// blocks too, BlockingQueryFailed (a query) or InvalidObjectCheck,
	// ObjectCheckCostExceeded, ObjectCheckFailed or ObjectCheckForbidden
	// (an object check).
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason"`
	// Message says what the query returned or why it cannot be run.
	// +kubebuilder:validation:MaxLength=32768
	// +optional
	Message string `json:"message,omitempty"`
	// LastEvaluationTime is when the query was last run.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	LastEvaluationTime metav1.Time `json:"lastEvaluationTime"`
}

// MaintenancePool groups nodes that share a reboot budget, maintenance windows
// and drain options.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=mp;mpool,categories=kmaint
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodes`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updated`
// +kubebuilder:printcolumn:name="Unavailable",type=integer,JSONPath=`.status.unavailable`
// +kubebuilder:printcolumn:name="Max",type=integer,JSONPath=`.status.maxUnavailable`,priority=1
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.pendingRequests`,priority=1
// +kubebuilder:printcolumn:name="OptedOut",type=integer,JSONPath=`.status.optedOut`,priority=1
// +kubebuilder:printcolumn:name="Settling",type=integer,JSONPath=`.status.settling`,priority=1
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.paused`
// +kubebuilder:printcolumn:name="Halted",type=string,JSONPath=`.status.conditions[?(@.type=="Halted")].status`
// +kubebuilder:printcolumn:name="Blocked",type=string,JSONPath=`.status.conditions[?(@.type=="Blocked")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'default' ? !has(self.spec.nodeSelector) : has(self.spec.nodeSelector)",message="spec.nodeSelector is required, except on the pool named default, which takes the nodes no other pool selects and must not have one"
type MaintenancePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   MaintenancePoolSpec   `json:"spec"`
	Status MaintenancePoolStatus `json:"status,omitempty"`

	// unreadable says why the stored body could not be decoded; see
	// Unreadable. Never serialized.
	unreadable string `json:"-"`
}

// MaintenancePoolList is a list of MaintenancePools.
//
// +kubebuilder:object:root=true
type MaintenancePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MaintenancePool `json:"items"`
}

func init() {
	SchemeBuilder.Register(&MaintenancePool{}, &MaintenancePoolList{})
}
