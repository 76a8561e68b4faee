package v1alpha1

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The bounds of a pool's settle time and health checks.
const (
	// MaxSettleTime bounds spec.settleTime: a node that must prove itself
	// for longer holds its slot so long that a rollout barely moves.
	MaxSettleTime = 24 * time.Hour
	// DefaultHealthCheckInterval is healthChecks.interval when unset.
	DefaultHealthCheckInterval = 30 * time.Second
	// MinHealthCheckInterval and MaxHealthCheckInterval bound it.
	MinHealthCheckInterval = 5 * time.Second
	MaxHealthCheckInterval = 10 * time.Minute
	// MaxCanaries bounds healthChecks.canaries.
	MaxCanaries = 100
	// MaxFreezes bounds spec.freezes of a pool and of a policy.
	MaxFreezes = 32
)

// HealthChecks are PromQL queries that a rebooted node must pass before it
// gives its slot to the next node. Any series a query returns that names
// the node is a bad result, as in a Prometheus alerting rule: write the
// condition that is unhealthy, e.g. `kube_node_status_condition{
// condition="Ready",status="true"} == 0` or `up{job="node"} == 0`. A query
// that returns nothing for the node passes it, so write checks whose
// absence is not taken for health where it matters (absent(), or `unless`).
// An object check needs no Prometheus: kmaint evaluates its CEL expression
// over the node, its pods or pods it selects, and false is a bad result.
type HealthChecks struct {
	// Queries are the checks, evaluated together for every node of the
	// pool that settles.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	Queries []HealthCheck `json:"queries"`

	// Interval is how often the checks run while nodes settle, from 5s to
	// 10m (default 30s). A node passes at the first evaluation at or after
	// the end of its settle time, if no evaluation since it came back
	// returned a bad result for it.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5s') && duration(self) <= duration('10m')",message="interval must be a Go duration from 5s to 10m"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Resume says what lifts the halt a failed check puts on the pool:
	//
	//   - Manual (the default): a person, with `kubectl kmaint resume
	//     POOL` (which writes the annotation kmaint.io/resume-halt). The
	//     failed node gives up its slot then, as it is.
	//   - OnRecovery: the checks themselves, once they have passed for the
	//     node again for a whole settle time; a person may still resume
	//     it sooner.
	// +kubebuilder:default=Manual
	// +optional
	Resume HaltResume `json:"resume,omitempty"`

	// Canaries is how many nodes of a rollout of spec.desiredConfig go
	// first: until that many nodes run the new config and have passed
	// their checks, the pool admits no more than would make up the
	// number, whatever maxUnavailable allows. 0 (the default) has none.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Canaries int32 `json:"canaries,omitempty"`
}

// HealthCheck is one check a rebooted node must pass: a PromQL query it
// must not show up in, or an object check (objects and expression) whose
// CEL expression must be true for it.
// +kubebuilder:validation:XValidation:rule="has(self.query) != has(self.objects)",message="a health check has exactly one of query (PromQL) or objects (with expression)"
// +kubebuilder:validation:XValidation:rule="has(self.objects) == has(self.expression)",message="expression goes with objects, and objects with expression"
type HealthCheck struct {
	// Name identifies the check in conditions, events and metrics.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Name string `json:"name"`

	// Query is an instant PromQL query; each series it returns is a bad
	// result for the node its NodeLabel names. Required unless the check
	// is an object check.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Query string `json:"query,omitempty"`

	// Objects are the objects an object check reads (see CheckObjects):
	// for node and podsOnNode, those of each settling node; for pods, the
	// pods it selects, the same for every settling node.
	// +optional
	Objects *CheckObjects `json:"objects,omitempty"`

	// Expression is the object check's CEL expression (Kubernetes' CEL
	// libraries and cost limits), over the variables its objects give:
	// `node`, `pods`. It must be a bool; false is a bad result for the
	// node, as a series is for a query. One that does not compile, costs
	// too much or fails passes no node, as a query that cannot run.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Expression string `json:"expression,omitempty"`

	// NodeLabel is the series label that names the node (a query's only).
	// +kubebuilder:default=node
	// +kubebuilder:validation:MaxLength=128
	// +optional
	NodeLabel string `json:"nodeLabel,omitempty"`

	// MatchNodeBy says whether NodeLabel holds the node's name or one of
	// its addresses (node_exporter's instance label, less its port); a
	// query's only.
	// +kubebuilder:default=Name
	// +optional
	MatchNodeBy NodeMatch `json:"matchNodeBy,omitempty"`
}

// HaltResume is what lifts a pool's halt: Manual or OnRecovery.
// +kubebuilder:validation:Enum=Manual;OnRecovery
type HaltResume string

// The ways a halt is lifted.
const (
	// ResumeManual waits for a person.
	ResumeManual HaltResume = "Manual"
	// ResumeOnRecovery lifts the halt once the checks pass again.
	ResumeOnRecovery HaltResume = "OnRecovery"
)

// ResumeHaltAnnotation on a MaintenancePool resumes its halt: its value is
// an RFC 3339 time, and every node whose check failed at or before it gives
// up its slot as it is. `kubectl kmaint resume POOL` writes the time of the
// pool's latest failure, from status.halt, so that a failure it did not
// show is not resumed with the others. A person writes it; the operator
// only reads it.
const ResumeHaltAnnotation = "kmaint.io/resume-halt"

// CheckInterval returns interval, or its default when unset, within bounds.
func (h *HealthChecks) CheckInterval() time.Duration {
	if h == nil || h.Interval == nil || h.Interval.Duration <= 0 {
		return DefaultHealthCheckInterval
	}
	return min(max(h.Interval.Duration, MinHealthCheckInterval), MaxHealthCheckInterval)
}

// ResumePolicy returns resume, or its default when unset.
func (h *HealthChecks) ResumePolicy() HaltResume {
	if h == nil || h.Resume == "" {
		return ResumeManual
	}
	return h.Resume
}

// FreezePeriod is a span of time in which a pool (or a RebootPolicy's
// requests) admits nothing new, whatever its windows say: either an
// absolute range (start and end), or a recurring one (schedule, duration
// and time zone, as a window). Nodes admitted before it starts finish.
// A request passes a freeze only when it says so (a NodeMaintenance's
// ignoreFreezes); ignoreWindows does not.
// +kubebuilder:validation:XValidation:rule="(has(self.start) && has(self.end) && !has(self.schedule) && !has(self.duration)) || (!has(self.start) && !has(self.end) && has(self.schedule) && has(self.duration))",message="a freeze is either absolute (start and end) or recurring (schedule and duration), not both"
// +kubebuilder:validation:XValidation:rule="!has(self.start) || !has(self.end) || self.end > self.start",message="end must be after start"
// +kubebuilder:validation:XValidation:rule="has(self.schedule) || !has(self.timeZone)",message="timeZone applies to a recurring freeze (schedule) only; start and end carry their own offset"
type FreezePeriod struct {
	// Name identifies the freeze in conditions, events and metrics.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Name string `json:"name"`

	// Reason says why, for a person, e.g. "shopping season".
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Reason string `json:"reason,omitempty"`

	// Start and End bound an absolute freeze, RFC 3339 with an offset,
	// e.g. 2026-11-20T00:00:00Z (the schema's date-time format refuses
	// anything else). The freeze is in force from start, up to but not
	// including end.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Start *metav1.Time `json:"start,omitempty"`
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +optional
	End *metav1.Time `json:"end,omitempty"`

	// Schedule is a standard five-field cron expression for when a
	// recurring freeze starts, e.g. "0 0 * * 5" for every Friday.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Schedule string `json:"schedule,omitempty"`

	// Duration is how long a recurring freeze lasts once it starts, up to
	// 8784h (366 days).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('8784h')",message="duration must be a positive Go duration of at most 8784h (366 days)"
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`

	// TimeZone is the IANA time zone a recurring freeze's schedule is read
	// in (default UTC).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

// PoolHalt is why a pool admits nothing new until a person resumes it or
// its checks recover: the nodes whose health checks failed after their
// reboot.
type PoolHalt struct {
	// Since is when the first of these nodes failed.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	Since metav1.Time `json:"since"`
	// Resume is what lifts the halt, from spec.healthChecks.resume.
	// +kubebuilder:validation:MaxLength=32
	Resume HaltResume `json:"resume"`
	// Nodes are the failed nodes, oldest failure first.
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	Nodes []HaltedNode `json:"nodes"`
}

// HaltedNode is a node whose health check failed after its reboot.
type HaltedNode struct {
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node"`
	// Check names the check that failed, or the hook.
	// +kubebuilder:validation:MaxLength=63
	Check string `json:"check"`
	// Value is the bad sample's value, or the reason the hook failed
	// (HookTimeout, HookJobFailed, HookJobLost, HookJobNotStarted,
	// HookJobNotOurs).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Value string `json:"value,omitempty"`
	// Message says what the check returned, with the series.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Message string `json:"message,omitempty"`
	// Time is when the check failed, by the operator's clock; the time
	// kmaint.io/resume-halt compares with.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	Time metav1.Time `json:"time"`
}

// ActiveFreeze is the pool's freeze in force. A RebootPolicy's freeze holds
// only that policy's requests, and is told by their Waiting condition.
type ActiveFreeze struct {
	// Name is the freeze's name in spec.freezes.
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Reason string `json:"reason,omitempty"`
	// End is when it ends (the latest end of the freezes in force).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	End metav1.Time `json:"end"`
}

// ResumeHaltTime reads the pool's kmaint.io/resume-halt: zero when absent, and
// an error (with zero) when it cannot be used. A time in the future, past
// the clock skew kmaint allows, resumes nothing: it would resume every
// failure until then, failures no person has seen, and a far one would
// switch the pool's halts off for good.
func (pool *MaintenancePool) ResumeHaltTime(now time.Time) (time.Time, error) {
	s, ok := pool.Annotations[ResumeHaltAnnotation]
	if !ok {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(s))
	switch {
	case err != nil:
		return time.Time{}, fmt.Errorf("annotation %s=%q is not an RFC 3339 time: %w", ResumeHaltAnnotation, s, err)
	case t.After(now.Add(MaxClockSkew)):
		return time.Time{}, fmt.Errorf("annotation %s=%q lies in the future: a resume names the failures it lifts by their time in status.halt (kubectl kmaint resume %s writes it)",
			ResumeHaltAnnotation, s, pool.Name)
	}
	return t, nil
}

// IsHookHalt reports whether a halted node's entry is a hook's failure,
// whose value is the failure's reason (a health check's is a sample's
// value, a number).
func IsHookHalt(n HaltedNode) bool { return strings.HasPrefix(n.Value, "Hook") }
