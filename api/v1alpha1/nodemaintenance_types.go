package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// MaintenanceType is what is done to the node.
// +kubebuilder:validation:Enum=Reboot
type MaintenanceType string

// RebootMaintenance reboots the node.
const RebootMaintenance MaintenanceType = "Reboot"

// Source is where a reboot request came from.
// +kubebuilder:validation:Enum=api;host;config;metric;schedule;alert;condition;sentinel
type Source string

// The sources of reboot requests.
const (
	// SourceAPI is a NodeMaintenance created by a person or a client.
	SourceAPI Source = "api"
	// SourceHost is `kmaint-daemon request-reboot` run on the node.
	SourceHost Source = "host"
	// SourceConfig is the node's pool wanting another config.
	SourceConfig Source = "config"
	// SourceMetric is a RebootPolicy's Prometheus trigger.
	SourceMetric Source = "metric"
	// SourceSchedule is a RebootPolicy's cron schedule.
	SourceSchedule Source = "schedule"
	// SourceAlert is a RebootPolicy's Alertmanager trigger.
	SourceAlert Source = "alert"
	// SourceCondition is a RebootPolicy's node condition trigger.
	SourceCondition Source = "condition"
	// SourceSentinel is the host saying it needs a reboot: the daemon saw
	// its reboot sentinel (the file Debian's package tools write, or a
	// command such as needs-restarting -r).
	SourceSentinel Source = "sentinel"
)

// Sources are every source, in the order the docs list them: for metrics
// that start each source's series at zero, and readers that refuse others.
func Sources() []Source {
	return []Source{SourceAPI, SourceHost, SourceConfig, SourceMetric, SourceSchedule, SourceAlert, SourceCondition, SourceSentinel}
}

// RaisedOnNode reports whether requests of this source start on the node (in
// its journal) and reach the API as a NodeMaintenance the operator records,
// rather than starting as a NodeMaintenance the daemon journals.
func (s Source) RaisedOnNode() bool {
	return s == SourceHost || s == SourceConfig || s == SourceSentinel
}

// NodeMaintenanceSpec is one request to reboot one node.
type NodeMaintenanceSpec struct {
	// NodeName is the node to reboot.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="nodeName is immutable: create a new NodeMaintenance for another node"
	NodeName string `json:"nodeName"`

	// Type of maintenance.
	// +kubebuilder:default=Reboot
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable"
	// +optional
	Type MaintenanceType `json:"type,omitempty"`

	// Reason is why the node should reboot; it is written to the node's
	// journal. Plain text: control characters other than tab are refused.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\x00-\x08\x0a-\x1f\x7f]*$`
	Reason string `json:"reason"`

	// Source is where the request came from. People and clients leave the
	// default; kmaint sets the others.
	// +kubebuilder:default=api
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="source is immutable"
	// +optional
	Source Source `json:"source,omitempty"`

	// Policy names the RebootPolicy that raised the request, if one did.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Policy string `json:"policy,omitempty"`

	// IgnoreWindows lets the request be admitted outside maintenance windows.
	// For emergencies: the pool's budget still holds. Setting it needs the
	// right to use maintenanceoverrides.kmaint.io named ignoreWindows.
	// +optional
	IgnoreWindows bool `json:"ignoreWindows,omitempty"`

	// IgnoreFreezes lets the request be admitted during its pool's and its
	// policy's freeze periods. It is separate from ignoreWindows on
	// purpose: a freeze is people deciding that nothing reboots, and an
	// emergency that must pass it says so. The budget, a pause, a halt
	// and the cluster's stop still hold. Setting it needs the right to use
	// maintenanceoverrides.kmaint.io named ignoreFreezes.
	// +optional
	IgnoreFreezes bool `json:"ignoreFreezes,omitempty"`
}

// OverridesResource is the resource of group kmaint.io that RBAC grants to
// let an identity set a NodeMaintenance's overrides: the verb use
// (OverrideVerb) on it, named after the field (ignoreWindows,
// ignoreFreezes). No such objects exist; admission asks the authorizer
// about them (config/admission/request-overrides-policy.yaml), so that
// the right to ask for a reboot is not the right to pass a freeze.
const OverridesResource = "maintenanceoverrides"

// OverrideVerb is the verb granted on OverridesResource.
const OverrideVerb = "use"

// Phase is where a NodeMaintenance is on the reboot path.
// +kubebuilder:validation:Enum=Pending;Requested;Draining;Approved;Rebooting;Settling;Succeeded;Failed
type Phase string

// The phases of a NodeMaintenance, in order.
const (
	// PhasePending: accepted, not yet raised by the node's daemon.
	PhasePending Phase = "Pending"
	// PhaseRequested: the node's daemon raised it; waiting for admission.
	PhaseRequested Phase = "Requested"
	// PhaseDraining: the gate admitted the node within its pool's budget;
	// it is cordoned and its pods are being evicted.
	PhaseDraining Phase = "Draining"
	// PhaseApproved: the node is drained and its reboot is approved for the
	// boot the request was made in (the node's reboot-approved annotation);
	// its daemon has not yet said it is rebooting. A request that stays
	// here has a daemon that does not act on the approval.
	PhaseApproved Phase = "Approved"
	// PhaseRebooting: the daemon asked for the reboot, or the node is coming
	// back with a new boot.
	PhaseRebooting Phase = "Rebooting"
	// PhaseSettling: the node came back Ready with a new boot ID, and keeps
	// its slot in its pool's budget for the pool's settle time and health
	// checks (see the Healthy condition).
	PhaseSettling Phase = "Settling"
	// PhaseSucceeded: the node came back Ready with a new boot ID (and
	// settled, in a pool with a settle time or health checks).
	PhaseSucceeded Phase = "Succeeded"
	// PhaseFailed: the request will not be carried out; see the Succeeded
	// condition for why.
	PhaseFailed Phase = "Failed"
)

// PhaseOrder lists the phases a successful request passes through, in
// order; Failed can follow any of them but Succeeded.
func PhaseOrder() []Phase {
	return []Phase{PhasePending, PhaseRequested, PhaseDraining, PhaseApproved, PhaseRebooting, PhaseSettling, PhaseSucceeded}
}

// Done reports whether the phase is final.
func (p Phase) Done() bool { return p == PhaseSucceeded || p == PhaseFailed }

// PhaseTimes records when a NodeMaintenance entered each phase. A phase
// passed through between two observations carries the time it was noticed.
// The operator stamps them with its own clock; the daemon cannot write them
// (config/admission).
type PhaseTimes struct {
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Pending *metav1.Time `json:"pending,omitempty"`
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Requested *metav1.Time `json:"requested,omitempty"`
	// Draining is when the gate admitted the node and began its drain.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Draining *metav1.Time `json:"draining,omitempty"`
	// Approved is when the drained node's reboot was approved.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Approved *metav1.Time `json:"approved,omitempty"`
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Rebooting *metav1.Time `json:"rebooting,omitempty"`
	// Settling is when the node was back and began to settle.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Settling *metav1.Time `json:"settling,omitempty"`
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Succeeded *metav1.Time `json:"succeeded,omitempty"`
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Failed *metav1.Time `json:"failed,omitempty"`
}

// Get returns when the phase was entered; nil when it was not.
func (t *PhaseTimes) Get(p Phase) *metav1.Time {
	if f := t.field(p); f != nil {
		return *f
	}
	return nil
}

// Set records when the phase was entered.
func (t *PhaseTimes) Set(p Phase, at metav1.Time) {
	if f := t.field(p); f != nil {
		*f = &at
	}
}

func (t *PhaseTimes) field(p Phase) **metav1.Time {
	switch p {
	case PhasePending:
		return &t.Pending
	case PhaseRequested:
		return &t.Requested
	case PhaseDraining:
		return &t.Draining
	case PhaseApproved:
		return &t.Approved
	case PhaseRebooting:
		return &t.Rebooting
	case PhaseSettling:
		return &t.Settling
	case PhaseSucceeded:
		return &t.Succeeded
	case PhaseFailed:
		return &t.Failed
	}
	return nil
}

// HookTime is the stretch a request's node spent at one point's hooks.
type HookTime struct {
	// Point is where on the path: beforeDrain, beforeReboot or afterReboot.
	// +kubebuilder:validation:Enum=beforeDrain;beforeReboot;afterReboot
	// +required
	Point string `json:"point"`
	// Hooks names the hooks at the point.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=atomic
	// +optional
	Hooks []string `json:"hooks,omitempty"`
	// Started is when the node reached the point.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +required
	Started metav1.Time `json:"started"`
	// Passed is when the last of its hooks passed; unset while one has not.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Passed *metav1.Time `json:"passed,omitempty"`
}

// NodeMaintenanceStatus is where the request is.
type NodeMaintenanceStatus struct {
	// Phase is where the request is on the reboot path.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// RequestID is the id the request carries in the node's journal and
	// reboot-requested annotation.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	RequestID string `json:"requestID,omitempty"`

	// BootIDBefore is the boot the request was made in.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	BootIDBefore string `json:"bootIDBefore,omitempty"`

	// JournaledBootID is the boot in which the node's daemon wrote the
	// request to the journal. Written by the daemon, for requests that start
	// in the API. With JournaledTime, the only status the daemon may write,
	// and only once (config/admission).
	// +kubebuilder:validation:MaxLength=128
	// +optional
	JournaledBootID string `json:"journaledBootID,omitempty"`

	// JournaledTime is when the daemon wrote the request to the journal,
	// by the node's clock: shown, never used to decide anything.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +optional
	JournaledTime *metav1.Time `json:"journaledTime,omitempty"`

	// BootIDAfter is the boot the node came back with.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	BootIDAfter string `json:"bootIDAfter,omitempty"`

	// PhaseTimes is when each phase was entered.
	// +optional
	PhaseTimes PhaseTimes `json:"phaseTimes,omitempty"`

	// HookTimes are the stretches the node spent at its pool's hooks
	// (spec.hooks of its MaintenancePool) on the way: when it reached each
	// point and when the point's hooks had all passed. The operator writes
	// them from the node's record.
	// +kubebuilder:validation:MaxItems=3
	// +listType=map
	// +listMapKey=point
	// +optional
	HookTimes []HookTime `json:"hookTimes,omitempty"`

	// Message says, for a person, what is happening or what went wrong.
	// +kubebuilder:validation:MaxLength=32768
	// +optional
	Message string `json:"message,omitempty"`

	// Conditions: Succeeded (True once done, False with the reason it failed),
	// Degraded (the reboot did not happen), Healthy (the pool's health
	// checks after the reboot), DrainForced, Waiting.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodeMaintenance is one request to reboot one node, whatever its source;
// `kubectl get nodemaintenances` is the cluster's reboot history.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=kmnm,categories=kmaint
// +kubebuilder:selectablefield:JSONPath=`.spec.nodeName`
// +kubebuilder:selectablefield:JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.source`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.spec.reason`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeMaintenance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   NodeMaintenanceSpec   `json:"spec"`
	Status NodeMaintenanceStatus `json:"status,omitempty"`

	// unreadable says why the stored body could not be decoded; see
	// Unreadable. Never serialized.
	unreadable string `json:"-"`
}

// RequestID is the id the request carries in the node's journal and its
// reboot-requested annotation: status.requestID once set; before that, the
// request-id label of a record made from the node; else the UID, for a
// request that starts in the API (the daemon journals it under its UID).
func (nm *NodeMaintenance) RequestID() string {
	if nm.Status.RequestID != "" {
		return nm.Status.RequestID
	}
	if id := nm.Labels[RequestIDLabel]; id != "" {
		return id
	}
	return string(nm.UID)
}

// NodeMaintenanceList is a list of NodeMaintenances.
//
// +kubebuilder:object:root=true
type NodeMaintenanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeMaintenance `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NodeMaintenance{}, &NodeMaintenanceList{})
}
