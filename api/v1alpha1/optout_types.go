package v1alpha1

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodOptOuts bounds what the pods on a pool's nodes can hold: which
// namespaces' pods may keep their node from being admitted, and for how
// long. Anyone who may create a pod can annotate it do-not-disrupt, or
// label it to match blockingPodSelector; without bounds a tenant holds its
// node's reboots, security reboots included, for as long as it likes.
type PodOptOuts struct {
	// Namespaces are the only namespaces whose pods hold their node, by a
	// do-not-disrupt annotation (kmaint's or Karpenter's) or by matching
	// blockingPodSelector; the pods of other namespaces hold nothing.
	// Unset, every namespace's do.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +listType=set
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`

	// MaxHold is how long pods may hold a node whose turn has come, from
	// when the gate first found them holding it, before afterMaxHold
	// applies: from 1m to 8760h (a year). Unset, there is no bound.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('8760h')",message="maxHold must be a Go duration from 1m to 8760h"
	// +optional
	MaxHold *metav1.Duration `json:"maxHold,omitempty"`

	// AfterMaxHold is what happens to a node held longer than maxHold:
	// Report (the default) keeps it held and says so, in a Warning event
	// PodOptOutOverdue and wherever its requests say why they wait; Admit
	// admits it at its turn, its pods' opt-outs set aside (the drain still
	// evicts through PodDisruptionBudgets), with a Warning event
	// PodOptOutOverridden. A node whose pods cannot be listed is never
	// admitted.
	// +kubebuilder:default=Report
	// +optional
	AfterMaxHold PodHoldAction `json:"afterMaxHold,omitempty"`
}

// PodHoldAction is what happens to a node its pods hold past maxHold.
// +kubebuilder:validation:Enum=Report;Admit
type PodHoldAction string

// The actions past maxHold.
const (
	PodHoldReport PodHoldAction = "Report"
	PodHoldAdmit  PodHoldAction = "Admit"
)

// Counts reports whether the opt-outs of pods in namespace hold their
// node; a nil PodOptOuts counts every namespace.
func (p *PodOptOuts) Counts(namespace string) bool {
	return p == nil || len(p.Namespaces) == 0 || slices.Contains(p.Namespaces, namespace)
}

// Overdue reports whether pods that have held a node since since have held
// it past maxHold at now; never without a maxHold.
func (p *PodOptOuts) Overdue(since, now time.Time) bool {
	if p == nil || p.MaxHold == nil || p.MaxHold.Duration <= 0 || since.IsZero() {
		return false
	}
	return !now.Before(since.Add(p.MaxHold.Duration))
}

// Admits reports whether a node held past maxHold is admitted.
func (p *PodOptOuts) Admits() bool { return p != nil && p.AfterMaxHold == PodHoldAdmit }
