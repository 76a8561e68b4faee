package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterGateName is the name of the one MaintenanceGate kmaint reads: the
// schema refuses any other, so that a stop cannot hide in a second object
// that the operator does not look at.
const ClusterGateName = "cluster"

// MaxStopReasonLength bounds spec.reason: it is quoted in every pool's
// Blocked condition and every waiting request.
const MaxStopReasonLength = 1024

// MaintenanceGateSpec is what the whole cluster allows.
type MaintenanceGateSpec struct {
	// Paused stops every new admission in every pool, the built-in default
	// pool included. Nodes already admitted finish their drain and reboot;
	// requests keep arriving and wait.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Reason says why, for the people who read the pools' Blocked
	// condition, the waiting requests and kubectl kmaint status.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Reason string `json:"reason,omitempty"`
}

// MaintenanceGateStatus is what the operator last said of the gate.
type MaintenanceGateStatus struct {
	// Conditions: Unreadable, while the stored object does not fit the API.
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MaintenanceGate is the cluster-wide switch over every pool's admissions:
// one object, named cluster. `kubectl kmaint pause --all --reason "..."`
// creates or sets it, `kubectl kmaint resume --all` lifts it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=mgate,categories=kmaint
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.paused`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.spec.reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'cluster'",message="the MaintenanceGate must be named cluster: kmaint reads that one object only, and a stop set anywhere else would stop nothing"
type MaintenanceGate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec   MaintenanceGateSpec   `json:"spec,omitempty"`
	Status MaintenanceGateStatus `json:"status,omitempty"`

	// unreadable says why the stored body could not be decoded; see
	// Unreadable. Never serialized.
	unreadable string `json:"-"`
}

// MaintenanceGateList is a list of MaintenanceGates.
//
// +kubebuilder:object:root=true
type MaintenanceGateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MaintenanceGate `json:"items"`
}

// Unreadable says why the MaintenanceGate's body could not be decoded; nil
// when it could. The gate then fails closed: no pool admits anything.
func (g *MaintenanceGate) Unreadable() error { return unreadableError(g.unreadable) }

// UnmarshalJSON decodes a MaintenanceGate, or only its metadata when the
// rest does not fit; see Unreadable.
func (g *MaintenanceGate) UnmarshalJSON(data []byte) error {
	type plain MaintenanceGate
	return decodeLeniently(data, (*plain)(g), &g.TypeMeta, &g.ObjectMeta, &g.unreadable)
}

// MarshalJSON refuses an unreadable MaintenanceGate: written back, its
// missing spec would replace the stored one.
func (g MaintenanceGate) MarshalJSON() ([]byte, error) {
	type plain MaintenanceGate
	return marshalReadable("MaintenanceGate", g.Name, g.unreadable, plain(g))
}

// Stop is what the cluster's MaintenanceGate says of new admissions: nil
// when they may go on (no gate, or one not paused).
type Stop struct {
	// Reason is ClusterPausedReason, or UnreadableGateReason when the gate
	// cannot be read (which stops admissions too: fail closed).
	Reason string
	// Message says why, for a person.
	Message string
}

// StopOf reads the cluster's MaintenanceGate; nil gate means none exists.
func StopOf(g *MaintenanceGate) *Stop {
	switch {
	case g == nil:
		return nil
	case g.Unreadable() != nil:
		return &Stop{Reason: UnreadableGateReason, Message: "MaintenanceGate " + g.Name + " cannot be read (" + g.Unreadable().Error() +
			"); no pool admits a node until it can be read or is deleted"}
	case !g.Spec.Paused:
		return nil
	}
	return &Stop{Reason: ClusterPausedReason, Message: "every pool is paused by MaintenanceGate cluster: " + FitReason(g.Spec.Reason) +
		"; kubectl kmaint resume --all lifts it"}
}

func init() {
	SchemeBuilder.Register(&MaintenanceGate{}, &MaintenanceGateList{})
}
