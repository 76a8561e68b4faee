package v1alpha1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// RebootPolicySpec says when kmaint itself asks for reboots: exactly one
// trigger, the nodes it applies to, and the guards on it.
// +kubebuilder:validation:XValidation:rule="[has(self.prometheus), has(self.schedule), has(self.alert), has(self.nodeCondition)].filter(t, t).size() == 1",message="exactly one trigger must be set: prometheus, schedule, alert or nodeCondition"
type RebootPolicySpec struct {
	// NodeSelector selects the nodes the policy may reboot. Empty selects all.
	// +optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`

	// Prometheus raises a request for each node whose query value crosses the
	// threshold and stays there for For.
	// +optional
	Prometheus *PrometheusTrigger `json:"prometheus,omitempty"`

	// Schedule raises a request for every selected node when it fires.
	// +optional
	Schedule *ScheduleTrigger `json:"schedule,omitempty"`

	// Alert raises a request for each node named by a firing Alertmanager
	// alert sent to the operator's webhook.
	// +optional
	Alert *AlertTrigger `json:"alert,omitempty"`

	// NodeCondition raises a request for each node whose condition of a
	// type (node-problem-detector's KernelDeadlock, say) has had a status
	// for For, as kmaint saw it.
	// +optional
	NodeCondition *NodeConditionTrigger `json:"nodeCondition,omitempty"`

	// Cooldown is the least time between a node's last reboot, whatever caused
	// it, and a reboot this policy asks for.
	// +kubebuilder:default="24h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="cooldown must be a Go duration such as 24h"
	// +optional
	Cooldown *metav1.Duration `json:"cooldown,omitempty"`

	// MaxConcurrentRequests caps the policy's open requests: an integer, or a
	// percentage of the selected nodes. When more nodes qualify at once, the
	// policy raises only this many and reports CapReached.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^(100|[1-9][0-9]?)%$')",message="maxConcurrentRequests must be an integer >= 1 or a percentage from 1% to 100%"
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self <= 1000000",message="maxConcurrentRequests must be at most 1000000; 100% means every selected node"
	// +optional
	MaxConcurrentRequests *intstr.IntOrString `json:"maxConcurrentRequests,omitempty"`

	// Windows limit when the policy's requests may be admitted, on top of
	// the pools' windows.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Windows []MaintenanceWindow `json:"windows,omitempty"`

	// Freezes are periods in which the policy's requests are not admitted,
	// on top of the pools' freezes; a request passes them only with
	// ignoreFreezes. The policy still raises requests meanwhile: they wait.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	// +optional
	Freezes []FreezePeriod `json:"freezes,omitempty"`

	// DryRun evaluates the policy and lists the nodes it would reboot in its
	// status, without raising requests.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`

	// Suspend stops evaluation altogether.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// Comparison is how a query value is compared with a threshold.
// +kubebuilder:validation:Enum=">";">=";"<";"<="
type Comparison string

// The comparisons a PrometheusTrigger supports.
const (
	GreaterThan        Comparison = ">"
	GreaterThanOrEqual Comparison = ">="
	LessThan           Comparison = "<"
	LessThanOrEqual    Comparison = "<="
)

// NodeMatch says how a series label is matched to a Node.
// +kubebuilder:validation:Enum=Name;Address
type NodeMatch string

// The ways a series label can name a node.
const (
	// MatchNodeName compares the label with the Node's name.
	MatchNodeName NodeMatch = "Name"
	// MatchNodeAddress compares the label, less any port, with the Node's
	// status addresses (InternalIP, Hostname ...), as node_exporter's
	// instance label needs.
	MatchNodeAddress NodeMatch = "Address"
)

// PrometheusTrigger fires for a node while its series of Query compares with
// Threshold for at least For.
type PrometheusTrigger struct {
	// Query is an instant PromQL query with one series per node.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Query string `json:"query"`

	// Threshold is the number a node's value is compared with, e.g. "0.9".
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$`
	Threshold string `json:"threshold"`

	// Comparison of the value with the threshold.
	// +kubebuilder:default=">"
	// +optional
	Comparison Comparison `json:"comparison,omitempty"`

	// For is how long the comparison must hold at every evaluation before
	// the node qualifies, as in a Prometheus alerting rule.
	// +kubebuilder:default="0s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="for must be a Go duration such as 30m"
	// +optional
	For *metav1.Duration `json:"for,omitempty"`

	// NodeLabel is the series label that names the node.
	// +kubebuilder:default=node
	// +kubebuilder:validation:MaxLength=128
	// +optional
	NodeLabel string `json:"nodeLabel,omitempty"`

	// MatchNodeBy says whether NodeLabel holds the node's name or one of its
	// addresses.
	// +kubebuilder:default=Name
	// +optional
	MatchNodeBy NodeMatch `json:"matchNodeBy,omitempty"`

	// Interval is how often the query is evaluated.
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="interval must be a Go duration of at least 1s"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// ScheduleTrigger fires on a cron schedule.
type ScheduleTrigger struct {
	// Cron is a standard five-field cron expression, e.g. "0 3 1 * *".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Cron string `json:"cron"`

	// TimeZone is the IANA time zone the expression is read in.
	// +kubebuilder:default=UTC
	// +kubebuilder:validation:MaxLength=64
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

// AlertTrigger fires for each node named by a firing Alertmanager alert.
type AlertTrigger struct {
	// AlertName is the alertname label of the alerts to act on.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	AlertName string `json:"alertName"`

	// Matchers are further labels an alert must carry, with these values.
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 128 && size(self[k]) <= 1024)",message="matchers: a label name is at most 128 characters and a value at most 1024"
	// +optional
	Matchers map[string]string `json:"matchers,omitempty"`

	// NodeLabel is the alert label that names the node.
	// +kubebuilder:default=node
	// +kubebuilder:validation:MaxLength=128
	// +optional
	NodeLabel string `json:"nodeLabel,omitempty"`

	// MatchNodeBy says whether NodeLabel holds the node's name or one of its
	// addresses.
	// +kubebuilder:default=Name
	// +optional
	MatchNodeBy NodeMatch `json:"matchNodeBy,omitempty"`
}

// MaxNodeConditionFor bounds a node condition trigger's For: a year, as an
// opt-out's maxHold. A longer hold is no trigger anyone means, and the bound
// keeps since+for far from the end of time.
const MaxNodeConditionFor = 8760 * time.Hour

// NodeConditionTrigger fires for a node while its condition of Type has had
// Status for at least For. The hold is timed from when the operator first
// saw the condition with that status, never from the condition's own
// lastTransitionTime: whoever may write a Node's status writes that too,
// and a date in the past would skip For.
type NodeConditionTrigger struct {
	// Type is the condition's type, e.g. KernelDeadlock: a name as
	// metav1.Condition's type is, optionally with a DNS-subdomain prefix
	// (example.com/DiskFailing).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	Type string `json:"type"`

	// Status is the condition's status that asks for a reboot.
	// +kubebuilder:default="True"
	// +kubebuilder:validation:Enum="True";"False";"Unknown"
	// +optional
	Status corev1.ConditionStatus `json:"status,omitempty"`

	// For is how long the condition must have had Status, without a break
	// the operator saw, before the node qualifies.
	// +kubebuilder:default="0s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('8760h')",message="for must be a Go duration from 0s to 8760h, such as 5m"
	// +optional
	For *metav1.Duration `json:"for,omitempty"`
}

// CandidateState says what a candidate waits for.
type CandidateState string

// The states of a candidate.
const (
	// CandidatePending meets the trigger, not yet for long enough.
	CandidatePending CandidateState = "Pending"
	// CandidateCooldown qualifies but rebooted too recently.
	CandidateCooldown CandidateState = "Cooldown"
	// CandidateOverCap qualifies but the policy has its cap of open requests.
	CandidateOverCap CandidateState = "OverCap"
	// CandidateRequested has an open reboot request, this policy's or another.
	CandidateRequested CandidateState = "Requested"
	// CandidateWouldRequest qualifies, and the policy is a dry run.
	CandidateWouldRequest CandidateState = "WouldRequest"
)

// Candidate is a node that currently meets a policy's trigger.
type Candidate struct {
	// Node is the node's name.
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node"`
	// Since is when the node started to meet the trigger.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	Since metav1.Time `json:"since"`
	// Value is the node's last query value, when the trigger has one.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Value string `json:"value,omitempty"`
	// State says what the candidate waits for.
	// +kubebuilder:validation:MaxLength=32
	// +optional
	State CandidateState `json:"state,omitempty"`
	// Until is when a Pending candidate qualifies or a Cooldown one may be
	// requested.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Until *metav1.Time `json:"until,omitempty"`
}

// RebootOutcome is what a reboot the policy asked for did to the node's
// value: the value that raised the request and the first one after.
type RebootOutcome struct {
	// Node is the node's name.
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node"`
	// NodeMaintenance is the request that rebooted it.
	// +kubebuilder:validation:MaxLength=253
	NodeMaintenance string `json:"nodeMaintenance"`
	// RebootedAt is when the reboot completed.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	RebootedAt metav1.Time `json:"rebootedAt"`
	// ValueBefore is the value the request was raised on.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	ValueBefore string `json:"valueBefore,omitempty"`
	// ValueAfter is the first value evaluated after the reboot.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	ValueAfter string `json:"valueAfter,omitempty"`
}

// FiringAlertsAnnotation on a RebootPolicy with an alert trigger holds the
// episodes of its alerts by node, firing or ended, as JSON {node:
// [{fingerprint, startsAt, until, ended}]} (alertwebhook.Record). The
// operator's Alertmanager webhook writes it, on any replica; the policy
// controller reads it.
const FiringAlertsAnnotation = "kmaint.io/firing-alerts"

// ValueAnnotation on a NodeMaintenance raised by a Prometheus trigger holds
// the value it was raised on.
const ValueAnnotation = "kmaint.io/policy-value"

// RebootPolicyStatus is what the policy's last evaluation found.
type RebootPolicyStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// LastEvaluationTime is when the trigger was last evaluated.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +optional
	LastEvaluationTime *metav1.Time `json:"lastEvaluationTime,omitempty"`

	// LastEvaluationDuration is how long that evaluation took.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +optional
	LastEvaluationDuration *metav1.Duration `json:"lastEvaluationDuration,omitempty"`

	// Candidates are the nodes meeting the trigger, and since when: one per
	// node, and no more than one object can hold.
	// +kubebuilder:validation:MaxItems=10000
	// +listType=map
	// +listMapKey=node
	// +optional
	Candidates []Candidate `json:"candidates,omitempty"`

	// LastScheduleTime is the last fire time of a schedule trigger that was
	// acted on.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// WouldRequest lists the nodes a dry run would have requested reboots
	// for at the last evaluation.
	// +kubebuilder:validation:MaxItems=10000
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	WouldRequest []string `json:"wouldRequest,omitempty"`

	// Outcomes holds, per node, the last reboot this policy asked for and the
	// node's value before and after it, so that one can see whether the
	// reboot helped.
	// +kubebuilder:validation:MaxItems=10000
	// +listType=map
	// +listMapKey=node
	// +optional
	Outcomes []RebootOutcome `json:"outcomes,omitempty"`

	// RequestsRaised counts the NodeMaintenances this policy has created.
	// +optional
	RequestsRaised int64 `json:"requestsRaised,omitempty"`

	// Conditions: Ready, QueryFailing, PrometheusUnreachable, CapReached,
	// UnmatchedSeries.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RebootPolicy raises reboot requests from a metric, an alert, a schedule
// or a node condition.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=rp,categories=kmaint
// +kubebuilder:printcolumn:name="DryRun",type=boolean,JSONPath=`.spec.dryRun`
// +kubebuilder:printcolumn:name="Suspended",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Raised",type=integer,JSONPath=`.status.requestsRaised`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RebootPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   RebootPolicySpec   `json:"spec"`
	Status RebootPolicyStatus `json:"status,omitempty"`

	// unreadable says why the stored body could not be decoded; see
	// Unreadable. Never serialized.
	unreadable string `json:"-"`
}

// RebootPolicyList is a list of RebootPolicies.
//
// +kubebuilder:object:root=true
type RebootPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RebootPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&RebootPolicy{}, &RebootPolicyList{})
}
