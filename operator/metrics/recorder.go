package metrics

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Recorder records the operator's event metrics. A nil *Recorder records
// nothing, so controllers built without one (in unit tests) need no checks.
type Recorder struct {
	requests       *prometheus.CounterVec
	admissions     *prometheus.CounterVec
	drainDuration  *prometheus.HistogramVec
	drainFailures  *prometheus.CounterVec
	rebootDuration *prometheus.HistogramVec
	rebootFailures *prometheus.CounterVec
	completed      *prometheus.CounterVec
	evaluations    *prometheus.CounterVec
	evalErrors     *prometheus.CounterVec
	evalDuration   *prometheus.HistogramVec
	queryValue     *prometheus.GaugeVec
	overBudget     *prometheus.CounterVec
	pruned         prometheus.Counter
	drainRetries   *prometheus.CounterVec
	drainsForced   *prometheus.CounterVec
	forcedPods     *prometheus.CounterVec
	healthFailures *prometheus.CounterVec
	hookDuration   *prometheus.HistogramVec
	hookFailures   *prometheus.CounterVec
	silencesMade   *prometheus.CounterVec
	silencesEnded  *prometheus.CounterVec
	silencesGone   *prometheus.CounterVec
	silenceErrors  *prometheus.CounterVec
	silencesHeld   *prometheus.GaugeVec
}

// NewRecorder registers the event metrics with reg. Metrics registered
// already, as when a test runs several operators in one process, are
// shared.
func NewRecorder(reg prometheus.Registerer) (*Recorder, error) {
	// Drains take seconds to tens of minutes, reboots tens of seconds to
	// tens of minutes.
	drainBuckets := []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600}
	rebootBuckets := []float64{5, 15, 30, 60, 90, 120, 180, 300, 600, 1200, 1800}
	r := &Recorder{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: RequestsTotal,
			Help: "Reboot requests (NodeMaintenances) seen by the operator, by source, the node's pool and the policy that raised them (empty for none)."},
			[]string{"source", "pool", "policy"}),
		admissions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: AdmissionsTotal,
			Help: "Requests admitted by the gate (the node cordoned and draining), by pool."}, []string{"pool"}),
		drainDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: DrainDurationSeconds,
			Help: "Time from admission to a drained, approved node, by pool.", Buckets: drainBuckets}, []string{"pool"}),
		drainFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: DrainFailuresTotal,
			Help: "Drains abandoned, by pool and reason (e.g. DrainTimeout)."}, []string{"pool", "reason"}),
		rebootDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: RebootDurationSeconds,
			Help: "Time from approval to the node back Ready with a new boot ID, by pool.", Buckets: rebootBuckets}, []string{"pool"}),
		rebootFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: RebootFailuresTotal,
			Help: "Approved reboots that did not happen in time (the daemon reported degraded) or failed, by pool and reason."}, []string{"pool", "reason"}),
		completed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MaintenancesCompletedTotal,
			Help: "NodeMaintenances that reached Succeeded or Failed, by pool, source and result."}, []string{"pool", "source", "result"}),
		evaluations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: PolicyEvaluationsTotal,
			Help: "Evaluations of a RebootPolicy's trigger (Prometheus queries run, schedules and alerts read)."}, []string{"policy"}),
		evalErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: PolicyEvaluationErrorsTotal,
			Help: "Failed evaluations of a RebootPolicy, by reason: query (Prometheus refused it), unreachable, or invalid (the spec or a record cannot be used)."}, []string{"policy", "reason"}),
		evalDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: PolicyEvaluationDurationSecs,
			Help: "Time a RebootPolicy's Prometheus query took.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)}, []string{"policy"}),
		queryValue: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: PolicyQueryValue,
			Help: "A RebootPolicy's last query value for each selected node it names."}, []string{"policy", "node"}),
		overBudget: prometheus.NewCounterVec(prometheus.CounterOpts{Name: PoolOverBudgetEpisodesTotal,
			Help: "Times a pool went over its budget (its OverBudget condition turned True), by pool."}, []string{"pool"}),
		pruned: prometheus.NewCounter(prometheus.CounterOpts{Name: MaintenancesPrunedTotal,
			Help: "Finished NodeMaintenances deleted because they fell out of the history's retention."}),
		drainRetries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: DrainRetriesTotal,
			Help: "Drains that timed out and will be tried again (drain.onTimeout Retry), by pool."}, []string{"pool"}),
		drainsForced: prometheus.NewCounterVec(prometheus.CounterOpts{Name: DrainsForcedTotal,
			Help: "Drains that timed out and were forced (drain.onTimeout Force): pods deleted bypassing their PodDisruptionBudgets and the node rebooted anyway, by pool."}, []string{"pool"}),
		forcedPods: prometheus.NewCounterVec(prometheus.CounterOpts{Name: DrainForcedPodsTotal,
			Help: "Pods deleted by forced drains, bypassing their PodDisruptionBudgets, by pool."}, []string{"pool"}),
		healthFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: HealthCheckFailuresTotal,
			Help: "Settling nodes a pool's health check found bad after their reboot (each halts the pool), by pool and check."}, []string{"pool", "check"}),
		hookDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: HookDurationSeconds,
			Help: "Time an attempt of a hook took, from its start to passed or failed, by pool, point, hook and result.", Buckets: drainBuckets},
			[]string{"pool", "point", "hook", "result"}),
		hookFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: HookFailuresTotal,
			Help: "Attempts of hooks that failed (a timeout, a Job that failed, was lost or could not be made), by pool, point, hook and reason."},
			[]string{"pool", "point", "hook", "reason"}),
		silencesMade: prometheus.NewCounterVec(prometheus.CounterOpts{Name: SilencesMadeTotal,
			Help: "Alertmanager silences made for nodes in flight, by Alertmanager."}, []string{"alertmanager"}),
		silencesEnded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: SilencesExpiredTotal,
			Help: "Silences kmaint expired when their node's maintenance ended, by Alertmanager."}, []string{"alertmanager"}),
		silencesGone: prometheus.NewCounterVec(prometheus.CounterOpts{Name: SilencesRemovedTotal,
			Help: "Silences someone else expired while their node was in flight (not made again), by Alertmanager."}, []string{"alertmanager"}),
		silenceErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: SilenceErrorsTotal,
			Help: "Calls to Alertmanager's silences API that failed, by Alertmanager and operation (make, extend, expire, list)."},
			[]string{"alertmanager", "operation"}),
		silencesHeld: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: SilencesHeld,
			Help: "Silences kmaint holds now for nodes in flight, by Alertmanager."}, []string{"alertmanager"}),
	}
	var err error
	r.requests = register(reg, r.requests, &err)
	r.admissions = register(reg, r.admissions, &err)
	r.drainDuration = register(reg, r.drainDuration, &err)
	r.drainFailures = register(reg, r.drainFailures, &err)
	r.rebootDuration = register(reg, r.rebootDuration, &err)
	r.rebootFailures = register(reg, r.rebootFailures, &err)
	r.completed = register(reg, r.completed, &err)
	r.evaluations = register(reg, r.evaluations, &err)
	r.evalErrors = register(reg, r.evalErrors, &err)
	r.evalDuration = register(reg, r.evalDuration, &err)
	r.queryValue = register(reg, r.queryValue, &err)
	r.overBudget = register(reg, r.overBudget, &err)
	r.pruned = register(reg, r.pruned, &err)
	r.drainRetries = register(reg, r.drainRetries, &err)
	r.drainsForced = register(reg, r.drainsForced, &err)
	r.forcedPods = register(reg, r.forcedPods, &err)
	r.healthFailures = register(reg, r.healthFailures, &err)
	r.hookDuration = register(reg, r.hookDuration, &err)
	r.hookFailures = register(reg, r.hookFailures, &err)
	r.silencesMade = register(reg, r.silencesMade, &err)
	r.silencesEnded = register(reg, r.silencesEnded, &err)
	r.silencesGone = register(reg, r.silencesGone, &err)
	r.silenceErrors = register(reg, r.silenceErrors, &err)
	r.silencesHeld = register(reg, r.silencesHeld, &err)
	return r, err
}

// register registers c, or returns the collector registered already under
// its name.
func register[C prometheus.Collector](reg prometheus.Registerer, c C, errp *error) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing
		}
	}
	*errp = errors.Join(*errp, err)
	return c
}

// InitPool creates a pool's event series at 0. A counter series that first
// appears at 1 never rises as far as increase() and rate() can tell, so the
// pool's first admission, completion or failure would show as nothing.
func (r *Recorder) InitPool(pool string) {
	if r == nil {
		return
	}
	r.admissions.WithLabelValues(pool)
	r.overBudget.WithLabelValues(pool)
	r.drainFailures.WithLabelValues(pool, "DrainTimeout")
	r.drainRetries.WithLabelValues(pool)
	r.drainsForced.WithLabelValues(pool)
	r.forcedPods.WithLabelValues(pool)
	r.rebootFailures.WithLabelValues(pool, "RebootNotObserved")
	r.rebootFailures.WithLabelValues(pool, "NodeNotBack")
	for _, source := range []string{"api", "host", "config", "metric", "schedule", "alert", "condition", "sentinel"} {
		for _, result := range []string{"succeeded", "failed"} {
			r.completed.WithLabelValues(pool, source, result)
		}
		if source != "metric" && source != "schedule" && source != "alert" && source != "condition" {
			r.requests.WithLabelValues(source, pool, "")
		}
	}
}

// InitHealthCheck creates a pool's failure series of a check at 0.
func (r *Recorder) InitHealthCheck(pool, check string) {
	if r != nil {
		r.healthFailures.WithLabelValues(pool, check)
	}
}

// HealthCheckFailed counts a settling node a health check found bad.
func (r *Recorder) HealthCheckFailed(pool, check string) {
	if r != nil {
		r.healthFailures.WithLabelValues(pool, check).Inc()
	}
}

// HookFinished records how long an attempt of a hook took; result is
// passed or failed.
func (r *Recorder) HookFinished(pool, point, hook, result string, took time.Duration) {
	if r != nil {
		r.hookDuration.WithLabelValues(pool, point, hook, result).Observe(took.Seconds())
	}
}

// HookFailed counts a failed attempt of a hook.
func (r *Recorder) HookFailed(pool, point, hook, reason string) {
	if r != nil {
		r.hookFailures.WithLabelValues(pool, point, hook, reason).Inc()
	}
}

// RequestSeen counts a new request.
func (r *Recorder) RequestSeen(source, pool, policy string) {
	if r != nil {
		r.requests.WithLabelValues(source, pool, policy).Inc()
	}
}

// Admitted counts an admission.
func (r *Recorder) Admitted(pool string) {
	if r != nil {
		r.admissions.WithLabelValues(pool).Inc()
	}
}

// OverBudget counts a pool going over its budget.
func (r *Recorder) OverBudget(pool string) {
	if r != nil {
		r.overBudget.WithLabelValues(pool).Inc()
	}
}

// DrainEnd is how a drain stage's step ended a drain: it finished and its
// node was approved (Took, how long since the admission), it timed out and
// is to be tried again (Retried), it was abandoned (FailedFor, the reason),
// or forced (Forced, with the pods it deleted).
type DrainEnd struct {
	Took       time.Duration
	Retried    bool
	FailedFor  string
	Forced     bool
	ForcedPods int
}

// DrainEnded observes a drain's end: its duration, a retry, a failure or
// a forcing.
func (r *Recorder) DrainEnded(pool string, e DrainEnd) {
	switch {
	case r == nil:
	case e.Forced:
		r.drainsForced.WithLabelValues(pool).Inc()
		r.forcedPods.WithLabelValues(pool).Add(float64(e.ForcedPods))
	case e.Retried:
		r.drainRetries.WithLabelValues(pool).Inc()
	case e.FailedFor != "":
		r.drainFailures.WithLabelValues(pool, e.FailedFor).Inc()
	default:
		r.drainDuration.WithLabelValues(pool).Observe(e.Took.Seconds())
	}
}

// Rebooted observes a completed reboot.
func (r *Recorder) Rebooted(pool string, d time.Duration) {
	if r != nil {
		r.rebootDuration.WithLabelValues(pool).Observe(d.Seconds())
	}
}

// RebootFailed counts a reboot that did not happen.
func (r *Recorder) RebootFailed(pool, reason string) {
	if r != nil {
		r.rebootFailures.WithLabelValues(pool, reason).Inc()
	}
}

// Completed counts a NodeMaintenance done, with result succeeded or failed.
func (r *Recorder) Completed(pool, source, result string) {
	if r != nil {
		r.completed.WithLabelValues(pool, source, result).Inc()
	}
}

// PolicyEvaluated counts an evaluation; reason is empty for a good one.
func (r *Recorder) PolicyEvaluated(policy, reason string) {
	if r == nil {
		return
	}
	r.evaluations.WithLabelValues(policy).Inc()
	if reason != "" {
		r.evalErrors.WithLabelValues(policy, reason).Inc()
	}
}

// PolicyQueried observes how long a policy's query took.
func (r *Recorder) PolicyQueried(policy string, d time.Duration) {
	if r != nil {
		r.evalDuration.WithLabelValues(policy).Observe(d.Seconds())
	}
}

// PolicyValues replaces a policy's per-node values with those of its last
// evaluation: a node that left the result leaves the metric.
func (r *Recorder) PolicyValues(policy string, values map[string]float64) {
	if r == nil {
		return
	}
	r.queryValue.DeletePartialMatch(prometheus.Labels{"policy": policy})
	for node, v := range values {
		r.queryValue.WithLabelValues(policy, node).Set(v)
	}
}

// ForgetPolicy drops a deleted policy's per-node values.
func (r *Recorder) ForgetPolicy(policy string) {
	if r != nil {
		r.queryValue.DeletePartialMatch(prometheus.Labels{"policy": policy})
	}
}

// Pruned counts finished NodeMaintenances deleted by retention.
func (r *Recorder) Pruned(n int) {
	if r != nil {
		r.pruned.Add(float64(n))
	}
}

// Silences records what the silences controller did with one
// Alertmanager in a pass: silences made, expired at their end, found
// expired by someone else, and failed calls by operation.
func (r *Recorder) Silences(alertmanager string, made, expired, removed int, failed map[string]int) {
	if r == nil {
		return
	}
	r.silencesMade.WithLabelValues(alertmanager).Add(float64(made))
	r.silencesEnded.WithLabelValues(alertmanager).Add(float64(expired))
	r.silencesGone.WithLabelValues(alertmanager).Add(float64(removed))
	for op, n := range failed {
		r.silenceErrors.WithLabelValues(alertmanager, op).Add(float64(n))
	}
}

// SilencesHeld sets how many silences kmaint holds in an Alertmanager.
func (r *Recorder) SilencesHeld(alertmanager string, n int) {
	if r == nil {
		return
	}
	r.silencesHeld.WithLabelValues(alertmanager).Set(float64(n))
}

// InitSilences creates an Alertmanager's series at 0 (see InitPool).
func (r *Recorder) InitSilences(alertmanager string) {
	if r == nil {
		return
	}
	r.Silences(alertmanager, 0, 0, 0, nil)
	for _, op := range []string{"make", "extend", "expire", "list"} {
		r.silenceErrors.WithLabelValues(alertmanager, op)
	}
	r.SilencesHeld(alertmanager, 0)
}
