package v1alpha1

import "unicode/utf8"

// Condition types and reasons of kmaint's objects, defined once here so that
// the controllers that set them and the tools that read them (the plugin,
// metrics, dashboards, the report) spell them the same way.

// FitMessage keeps a condition's message within the API's limit of 32768
// bytes, cutting it on a character boundary with "…".
func FitMessage(s string) string {
	const limit = 32000
	if len(s) <= limit {
		return s
	}
	return CutAt(s, limit) + "…"
}

// CutAt returns s cut to at most n bytes on a character's boundary: the
// longest prefix of whole characters that fits.
func CutAt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// MaintenancePool condition types.
const (
	// BlockedCondition is True while requests wait and the pool admits none;
	// its reason is the first of the wait reasons below that holds.
	BlockedCondition = "Blocked"
	// DrainingCondition is True while nodes are being drained.
	DrainingCondition = "Draining"
	// DegradedCondition is True while a node's drain failed, its reboot
	// did not happen, the node did not come back from it in time (reason
	// NodeNotBack) or its daemon did not come back after it, or the pool's
	// spec or a node's annotations cannot be used. On a NodeMaintenance it
	// is True while the node's daemon reports that the approved reboot did
	// not happen or the node is not back from it (NodeNotBack), and stays
	// True (reason DaemonMissing) on a request whose reboot was completed
	// without the daemon's confirmation.
	DegradedCondition = "Degraded"
	// ConflictingCondition is True while another pool selects some of the
	// pool's nodes too, or a pool whose nodeSelector cannot be parsed might.
	ConflictingCondition = "Conflicting"
	// OverBudgetCondition is True while more of the pool's nodes count
	// against its budget than maxUnavailable allows, whatever the cause (a
	// node relabelled into the pool in flight, a lowered maxUnavailable,
	// nodes cordoned by hand or gone NotReady). kmaint never causes it.
	OverBudgetCondition = "OverBudget"
)

// UnreadableCondition is True on any kmaint object whose stored body does
// not fit the API's Go types (see MaintenancePool.Unreadable), with reason
// DecodeFailedReason and a message naming the field; the object is then
// written nothing else until it reads.
const UnreadableCondition = "Unreadable"

// DecodeFailedReason is UnreadableCondition's reason; UnreadableReason
// is the reason of the Warning event that reports such an object.
const (
	DecodeFailedReason = "DecodeFailed"
	UnreadableReason   = "Unreadable"
)

// NodeMaintenance condition types (and DegradedCondition above).
const (
	// SucceededCondition is Unknown while the request is open, True once
	// the node rebooted, False with the reason it failed.
	SucceededCondition = "Succeeded"
	// WaitingCondition is True while a Requested NodeMaintenance waits for
	// something other than its turn; its reason is one of the wait reasons
	// below, its message says until when.
	WaitingCondition = "Waiting"
)

// RebootPolicy condition types.
const (
	// ReadyCondition is True while the policy's trigger is evaluated.
	ReadyCondition = "Ready"
	// QueryFailingCondition is True while Prometheus refuses the query.
	QueryFailingCondition = "QueryFailing"
	// PrometheusUnreachableCondition is True while Prometheus cannot be
	// reached, or none is configured.
	PrometheusUnreachableCondition = "PrometheusUnreachable"
	// CapReachedCondition is True while more nodes qualify than the cap on
	// open requests lets through.
	CapReachedCondition = "CapReached"
	// UnmatchedSeriesCondition is True while series name no known node.
	UnmatchedSeriesCondition = "UnmatchedSeries"
)

// Why a request waits: the reasons of a pool's Blocked condition and of a
// NodeMaintenance's Waiting condition, in the order they are checked
// (policies.Wait).
const (
	// UnreadablePoolReason: a MaintenancePool cannot be read (see
	// MaintenancePool.Unreadable), so no pool admits anything.
	UnreadablePoolReason = "UnreadablePool"
	// ConflictingReason: more than one pool selects the node.
	ConflictingReason = "Conflicting"
	// InvalidSelectorReason: the pool's nodeSelector cannot be parsed, or,
	// for a node, that of a pool that might select it.
	InvalidSelectorReason = "InvalidSelector"
	// InvalidWindowReason: a window that applies cannot be read.
	InvalidWindowReason = "InvalidWindow"
	// PausedReason: the pool is paused.
	PausedReason = "Paused"
	// OutsideWindowReason: no window that applies is open.
	OutsideWindowReason = "OutsideWindow"
	// BlockingQueryReason: a blocking query returns a result.
	BlockingQueryReason = "BlockingQuery"
	// BlockingQueryFailedReason: a blocking query cannot be run, which is
	// taken for one that blocks.
	BlockingQueryFailedReason = "BlockingQueryFailed"
	// InvalidObjectCheckReason: an object check's expression does not
	// compile, or is not a bool; it holds (a blocking check) or passes no
	// node (a health check). Also the reason of a pool's Degraded
	// condition while one of its checks is so, whatever waits.
	InvalidObjectCheckReason = "InvalidObjectCheck"
	// ObjectCheckCostExceededReason: an object check's expression costs
	// more than Kubernetes' per-call limit of CEL, by its estimate or as it
	// ran; it holds as InvalidObjectCheck does.
	ObjectCheckCostExceededReason = "ObjectCheckCostExceeded"
	// ObjectCheckFailedReason: an object check's expression failed as it
	// ran (a field it reads is absent, a bad conversion), or its objects
	// could not be read or are too many; it holds, never passes.
	ObjectCheckFailedReason = "ObjectCheckFailed"
	// ObjectCheckForbiddenReason: the operator may not read the objects an
	// object check names (its rights are the chart's); it holds, never
	// passes.
	ObjectCheckForbiddenReason = "ObjectCheckForbidden"
	// BudgetExhaustedReason: the pool has as many nodes unavailable as its
	// maxUnavailable allows.
	BudgetExhaustedReason = "BudgetExhausted"
	// CacheBehindReason: the operator's cache is behind the API server in
	// what decides admissions (the pool's spec or Halted condition, the
	// MaintenanceGate), as after the API server was away, or the API
	// server cannot say: nothing is admitted or approved until it catches
	// up, usually within a second.
	CacheBehindReason = "CacheBehind"
)

// Why a request waits, continued: the cluster-wide stop and the opt-outs.
const (
	// ClusterPausedReason: the MaintenanceGate named cluster is paused, so
	// no pool admits anything new.
	ClusterPausedReason = "ClusterPaused"
	// UnreadableGateReason: the MaintenanceGate named cluster cannot be read
	// (see MaintenanceGate.Unreadable), so no pool admits anything new.
	UnreadableGateReason = "UnreadableMaintenanceGate"
	// InvalidBlockingPodSelectorReason: the pool's blockingPodSelector
	// cannot be parsed, so the pool admits nothing.
	InvalidBlockingPodSelectorReason = "InvalidBlockingPodSelector"
	// DoNotDisruptReason: the node, or a pod on it, is annotated
	// kmaint.io/do-not-disrupt (or karpenter.sh/do-not-disrupt).
	DoNotDisruptReason = "DoNotDisrupt"
	// BlockingPodReason: a pod on the node matches the pool's
	// blockingPodSelector, or the pods on the node cannot be listed.
	BlockingPodReason = "BlockingPod"
	// OptedOutReason: the pool's Blocked reason while every waiting node is
	// held by an opt-out (DoNotDisruptReason, BlockingPodReason).
	OptedOutReason = "OptedOut"
)

// OptedOutCondition is True on a MaintenancePool while some of its nodes'
// requests wait for an opt-out to be lifted; the message names them.
const OptedOutCondition = "OptedOut"

// NoOptOutsReason is OptedOutCondition's reason while it is False.
const NoOptOutsReason = "NoOptOuts"

// Other reasons of MaintenancePool conditions.
const (
	// MalformedAnnotationReason: a node's kmaint annotations cannot be read.
	MalformedAnnotationReason = "MalformedAnnotation"
	NotBlockedReason          = "NotBlocked"
	EvictingReason            = "Evicting"
	DrainBlockedReason        = "DrainBlocked"
	NoDrainsReason            = "NoDrains"
	NodesDegradedReason       = "NodesDegraded"
	AsExpectedReason          = "AsExpected"
	NodesInOtherPoolsReason   = "NodesInOtherPools"
	NoConflictsReason         = "NoConflicts"
	// TooManyUnavailableReason: OverBudget is True; the message counts and
	// names the nodes.
	TooManyUnavailableReason = "TooManyUnavailable"
	WithinBudgetReason       = "WithinBudget"
)

// UnreadableMaintenanceReason: a RebootPolicy's Ready condition is False
// with it while some NodeMaintenance cannot be read (see
// NodeMaintenance.Unreadable): the policy raises nothing, since any of them
// may be the reboot a node's cooldown counts from.
const UnreadableMaintenanceReason = "UnreadableMaintenance"

// Reasons of NodeMaintenance conditions.
const (
	// NodeNotFoundReason: the node does not exist.
	NodeNotFoundReason = "NodeNotFound"
	// DuplicateReason: the node already has an open request from the API.
	DuplicateReason = "Duplicate"
	// RebootedReason: the node came back with a new boot ID.
	RebootedReason = "Rebooted"
	// DrainTimeoutReason: the drain did not finish within the pool's
	// timeout and was abandoned.
	DrainTimeoutReason = "DrainTimeout"
	// RebootNotObservedReason: the daemon asked for the reboot and the boot
	// ID did not change.
	RebootNotObservedReason = "RebootNotObserved"
	// DaemonMissingReason: the node came back from its approved reboot
	// (Ready, new boot ID) and its daemon did not confirm it within the
	// operator's bound; the reboot was completed without it. Also the
	// reason of the Warning event on the node and its pool.
	DaemonMissingReason = "DaemonMissing"
	// NodeNotBackReason: the node was approved to reboot and has not come
	// back (a new boot ID, Ready) within the operator's bound; it keeps its
	// slot in the pool's budget. Also the reason of the pool's Degraded
	// condition and of the Warning event on the node and its pool.
	NodeNotBackReason = "NodeNotBack"
	// CancelledReason: the request was withdrawn on the node before its
	// reboot was approved (kmaint-daemon cancel-reboot).
	CancelledReason = "Cancelled"
)

// Reasons of Warning events that say kmaint contained what it was given: a
// node asking for more than it may, or a time it cannot trust.
const (
	// RequestsNotRecordedReason: a node raised more requests in one boot
	// than MaxRecordedPerBoot, or requests with ids that cannot be used;
	// those are not recorded as NodeMaintenances.
	RequestsNotRecordedReason = "RequestsNotRecorded"
	// FutureTimeReason: a time written into kmaint's objects lies further
	// in the future than MaxClockSkew; the operator does not use it.
	FutureTimeReason = "FutureTime"
	// RequestTimeBoundedReason: a node's request started on the node says
	// it was made more than MaxRequestLead before kmaint recorded it, or
	// more than MaxClockSkew after; it is queued as made within those
	// bounds.
	RequestTimeBoundedReason = "RequestTimeBounded"
	// ForeignRequestReason: a node's request names another node's open
	// NodeMaintenance; it gets none of that object's settings.
	ForeignRequestReason = "ForeignRequest"
	// PodOptOutOverdueReason: pods have held a node past its pool's
	// podOptOuts.maxHold, and the pool keeps it held (afterMaxHold Report).
	PodOptOutOverdueReason = "PodOptOutOverdue"
	// PodOptOutOverriddenReason: pods held a node past its pool's
	// podOptOuts.maxHold, and the pool admitted it (afterMaxHold Admit).
	PodOptOutOverriddenReason = "PodOptOutOverridden"
	// AlertsNotRecordedReason: a policy's record of firing alerts is full
	// (alertwebhook.MaxFiringPerNode, MaxRecordBytes); the alerts left out
	// ask for no reboot.
	AlertsNotRecordedReason = "AlertsNotRecorded"
)

// What happens at a drain's deadline (a pool's drain.onTimeout): the
// reasons of the Warning events on the node, its pool and its
// NodeMaintenance, of a waiting request's Waiting condition, and of the
// NodeMaintenance's DrainForced condition. An abandoned drain, and the last
// retry of one, keeps the reason DrainFailed for the event and
// DrainTimeoutReason for the request's failure.
const (
	// DrainRetryScheduledReason: a drain timed out and will be tried again;
	// the node is uncordoned meanwhile.
	DrainRetryScheduledReason = "DrainRetryScheduled"
	// DrainRetryBackoffReason: a request waits for its next drain attempt.
	DrainRetryBackoffReason = "DrainRetryBackoff"
	// DrainForcedReason: a drain timed out and the pods eviction could not
	// move were deleted, bypassing their PodDisruptionBudgets, so that the
	// node reboots anyway.
	DrainForcedReason = "DrainForced"
	// DrainFailedEventReason: a drain was abandoned (the event's reason; the
	// request fails with DrainTimeoutReason).
	DrainFailedEventReason = "DrainFailed"
	// NodeMarkingRefusedReason: the pool's nodeMarking cannot be put on a
	// node (the spec is invalid); its drain does not start.
	NodeMarkingRefusedReason = "NodeMarkingRefused"
	// RelabelledInFlightReason: a node's labels put it in another pool (or
	// in none) while it was in flight; it stays with the pool that admitted
	// it, under that pool's budget, drain and hooks, until its maintenance
	// ends (the event's reason, on the node and the pool).
	RelabelledInFlightReason = "RelabelledInFlight"
)

// DrainForcedCondition is True on a NodeMaintenance whose drain was forced;
// its message names the pods deleted. It stays after the request ends.
const DrainForcedCondition = "DrainForced"

// The events of a pool's rollout, recorded by the gate on the pool.
const (
	// RolloutStartedReason: the pool's desiredConfig reached nodes that do
	// not run it yet.
	RolloutStartedReason = "RolloutStarted"
	// RolloutFinishedReason: every node of the pool runs its desiredConfig.
	RolloutFinishedReason = "RolloutFinished"
)

// A pool's guard on its rollouts: settle time, health checks, halts and
// freezes (spec.settleTime, spec.healthChecks, spec.freezes).
const (
	// HaltedCondition is True on a MaintenancePool while it admits nothing
	// new because of its health checks: a node failed one (reason
	// HealthCheckFailed, the message names the node, the check and the
	// value), or they cannot be run for a settling node (reason
	// HealthCheckUnavailable, lifted as soon as they run).
	HaltedCondition = "Halted"
	// FrozenCondition is True on a MaintenancePool while one of its
	// freezes is in force (reason Frozen), whether or not requests wait;
	// on a RebootPolicy likewise for its own freezes. Reason InvalidFreeze
	// while one cannot be read.
	FrozenCondition = "Frozen"
	// HealthyCondition is on a NodeMaintenance whose pool has health
	// checks: Unknown while the node settles (reason HealthChecking),
	// True once it passed (HealthCheckPassed), False when a check failed
	// (HealthCheckFailed, naming the check and the value). It stays after
	// the request ends.
	HealthyCondition = "Healthy"
)

// The reasons of the guard's conditions, events and waits.
const (
	// HaltedReason: a request waits because its pool is halted (Blocked
	// and Waiting conditions).
	HaltedReason = "Halted"
	// HealthCheckFailedReason: a node's health check returned a bad result
	// after its reboot (Halted and Healthy conditions, the Warning event on
	// the node, its pool and its NodeMaintenance).
	HealthCheckFailedReason = "HealthCheckFailed"
	// HookFailedReason: a hook of a node failed for good (a timeout, a Job
	// that failed or could not start) and its onFailure halts the pool
	// (the Halted condition, and the Warning event on the node and its
	// pool).
	HookFailedReason = "HookFailed"
	// HealthCheckUnavailableReason: a settling node's health checks cannot
	// be run (Prometheus unreachable or not configured, a query refused);
	// the node does not pass, and nothing new is admitted until they run.
	HealthCheckUnavailableReason = "HealthCheckUnavailable"
	// HealthCheckingReason: the node settles and its checks pass so far.
	HealthCheckingReason = "HealthChecking"
	// HealthCheckPassedReason: the node settled and passed its checks.
	HealthCheckPassedReason = "HealthCheckPassed"
	// HealthCheckResumedReason: a person resumed the pool after the node
	// failed a check (Healthy stays False with this reason); also the
	// Normal event on the pool.
	HealthCheckResumedReason = "HaltResumed"
	// HealthCheckRecoveredReason: the node's checks passed for a whole
	// settle time after failing, and the pool, resuming OnRecovery, goes
	// on; the Normal event on the node and its pool.
	HealthCheckRecoveredReason = "HealthCheckRecovered"
	// PoolHaltedReason: the Warning event on the pool when it halts.
	PoolHaltedReason = "PoolHalted"
	// NotHaltedReason is HaltedCondition's reason while it is False.
	NotHaltedReason = "NotHalted"
	// SettledReason: the Normal event on a node (and its pool) that kept
	// its slot for the settle time, passed its checks, and gave it up.
	SettledReason = "Settled"
	// CanariesReason: a request waits for the rollout's canaries to pass
	// their checks (Blocked and Waiting conditions).
	CanariesReason = "WaitingForCanaries"
	// FrozenReason: a freeze is in force (Frozen condition; Blocked and
	// Waiting conditions of the requests it holds).
	FrozenReason = "Frozen"
	// NotFrozenReason is FrozenCondition's reason while it is False.
	NotFrozenReason = "NotFrozen"
	// FreezeStartedReason and FreezeEndedReason: Normal events on the
	// pool as its freeze starts and ends.
	FreezeStartedReason = "FreezeStarted"
	FreezeEndedReason   = "FreezeEnded"
	// InvalidFreezeReason: a freeze cannot be read (a schedule or time
	// zone the API accepted and the operator cannot parse): the pool, or
	// the policy's requests, admit nothing, fail closed.
	InvalidFreezeReason = "InvalidFreeze"
)

// The reasons of the silences' conditions, events and waits.
const (
	// InvalidSilencesReason: the pool's spec.silences cannot make silences
	// (a matcher that does not parse, a set that does not select by the
	// node); it admits nothing until they are fixed (Blocked condition).
	InvalidSilencesReason = "InvalidSilences"
	// SilencesUnavailableReason: an admitted node's silences cannot be
	// made (Alertmanager down, slow, refusing the credentials, or none
	// configured); with onUnreachable Hold the pool admits nothing new
	// (Blocked condition), with Proceed it goes on (the Warning event on
	// the node).
	SilencesUnavailableReason = "SilencesUnavailable"
	// SilencesMadeReason, SilencesExpiredReason: the events of a node's
	// silences made at its admission and expired when it is done.
	SilencesMadeReason    = "SilencesMade"
	SilencesExpiredReason = "SilencesExpired"
	// SilenceRemovedReason: someone expired a node's silence while it was
	// in flight; kmaint does not make it again for that maintenance.
	SilenceRemovedReason = "SilenceRemoved"
)

// QuorumAtRiskReason: a control-plane pool (spec.controlPlane) admits and
// approves nothing while an etcd member is not Ready, the members cannot
// be read, or another of its nodes is NotReady, cordoned or in flight
// (Blocked condition, the drained node's wait).
const QuorumAtRiskReason = "QuorumAtRisk"
