package v1alpha1

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// NodeMarking is what kmaint puts on a node around its reboot. kmaint
// records on the Node what it added (the kmaint.io/marks annotation), and
// removes only that: a label or taint the node had before, with the same
// value, stays; a label kmaint changed gets its old value back, unless
// someone changed it again meanwhile. The record, not the pool's spec, says
// what to remove, so a spec changed or a node relabelled mid-reboot, or an
// operator restart, leaves nothing behind.
// +kubebuilder:validation:XValidation:rule="!has(self.duringReboot) || !has(self.afterReboot) || !has(self.duringReboot.labels) || !has(self.afterReboot.labels) || self.duringReboot.labels.all(k, !(k in self.afterReboot.labels))",message="a label key may be in duringReboot or afterReboot, not both: the one removed after the reboot would remove the other"
type NodeMarking struct {
	// DuringReboot is put on the node when it is admitted, before its drain
	// starts, and removed when its reboot completes, or when the node is
	// uncordoned without a reboot (its drain abandoned or retried). For
	// example the label node.kubernetes.io/exclude-from-external-load-balancers
	// takes the node out of external load balancers before its pods are
	// evicted, and a PreferNoSchedule taint keeps new pods elsewhere.
	// +optional
	DuringReboot *DuringRebootMarks `json:"duringReboot,omitempty"`

	// AfterReboot is put on the node when its reboot completes, and left
	// there (kured's --post-reboot-node-labels): e.g. the time or the
	// config of the last reboot, for selectors and dashboards.
	// +optional
	AfterReboot *AfterRebootMarks `json:"afterReboot,omitempty"`
}

// DuringRebootMarks are the labels and taints a node carries while kmaint
// drains and reboots it.
type DuringRebootMarks struct {
	// Labels are {key: value} pairs put on the node. Keys under kmaint.io
	// are kmaint's own and refused. A label another pool's nodeSelector
	// matches moves no node: a node in flight stays with the pool that
	// admitted it until its maintenance ends.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253))",message="every key must be a label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of 1 to 63 alphanumerics, '-', '_' or '.' that starts and ends with an alphanumeric"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('kmaint.io/') && !k.matches('^[^/]*[.]kmaint[.]io/'))",message="label keys under kmaint.io are kmaint's own"
	// +optional
	Labels map[string]MarkValue `json:"labels,omitempty"`

	// Taints are put on the node; a taint it has already (same key and
	// effect) is left as it is. Effects NoSchedule and PreferNoSchedule
	// only: NoExecute would evict every pod at once, bypassing
	// PodDisruptionBudgets and the drain.
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=key
	// +listMapKey=effect
	// +optional
	Taints []MarkTaint `json:"taints,omitempty"`
}

// AfterRebootMarks are the labels put on a node whose reboot completed.
type AfterRebootMarks struct {
	// Labels are {key: value} pairs put on the node; keys under kmaint.io
	// are refused. They may move the node to another pool, which is safe
	// once its reboot is complete.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253))",message="every key must be a label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of 1 to 63 alphanumerics, '-', '_' or '.' that starts and ends with an alphanumeric"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('kmaint.io/') && !k.matches('^[^/]*[.]kmaint[.]io/'))",message="label keys under kmaint.io are kmaint's own"
	// +optional
	Labels map[string]MarkValue `json:"labels,omitempty"`
}

// MarkValue is a label or taint value: at most 63 alphanumerics, '-', '_'
// or '.', starting and ending with an alphanumeric, or empty.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:XValidation:rule="self.matches('^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$')",message="must be a label value: at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric, or empty"
type MarkValue string

// MarkTaint is a taint kmaint puts on a node during its reboot.
type MarkTaint struct {
	// Key is the taint's key, a label key. Keys under kmaint.io are
	// kmaint's own; keys under node.kubernetes.io and
	// node.cloudprovider.kubernetes.io belong to Kubernetes (the cordon
	// itself is node.kubernetes.io/unschedulable).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!self.contains('/') || self.indexOf('/') <= 253)",message="key must be a label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of 1 to 63 alphanumerics, '-', '_' or '.' that starts and ends with an alphanumeric"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('kmaint.io/') && !self.matches('^[^/]*[.]kmaint[.]io/')",message="taint keys under kmaint.io are kmaint's own"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('node.kubernetes.io/') && !self.startsWith('node.cloudprovider.kubernetes.io/')",message="taint keys under node.kubernetes.io and node.cloudprovider.kubernetes.io are Kubernetes' own"
	Key string `json:"key"`

	// Value is the taint's value; empty by default.
	// +optional
	Value MarkValue `json:"value,omitempty"`

	// Effect is NoSchedule or PreferNoSchedule.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self != 'NoExecute'",message="effect NoExecute is refused: it evicts every pod of the node at once, without respecting PodDisruptionBudgets or the drain's options; use NoSchedule or PreferNoSchedule"
	// +kubebuilder:validation:XValidation:rule="self in ['NoSchedule', 'PreferNoSchedule']",message="effect must be NoSchedule or PreferNoSchedule"
	Effect string `json:"effect"`
}

// DuringLabels returns the labels to put on a node during its reboot.
func (m *NodeMarking) DuringLabels() map[string]MarkValue {
	if m == nil || m.DuringReboot == nil {
		return nil
	}
	return m.DuringReboot.Labels
}

// DuringTaints returns the taints to put on a node during its reboot.
func (m *NodeMarking) DuringTaints() []MarkTaint {
	if m == nil || m.DuringReboot == nil {
		return nil
	}
	return m.DuringReboot.Taints
}

// AfterLabels returns the labels to put on a node after its reboot.
func (m *NodeMarking) AfterLabels() map[string]MarkValue {
	if m == nil || m.AfterReboot == nil {
		return nil
	}
	return m.AfterReboot.Labels
}

// Check says what the API server's schema would refuse in the marking, for
// a pool stored before the schema had these rules: the gate then marks
// nothing and says why. nil when it can be used.
func (m *NodeMarking) Check() error {
	if m == nil {
		return nil
	}
	var errs []error
	labels := func(where string, l map[string]MarkValue) {
		for k, v := range l {
			if problems := validation.IsQualifiedName(k); len(problems) > 0 {
				errs = append(errs, fmt.Errorf("%s label key %q: %s", where, k, strings.Join(problems, "; ")))
			}
			if problems := validation.IsValidLabelValue(string(v)); len(problems) > 0 {
				errs = append(errs, fmt.Errorf("%s label %s value %q: %s", where, k, v, strings.Join(problems, "; ")))
			}
			if ownKey(k) {
				errs = append(errs, fmt.Errorf("%s label key %s is under kmaint.io, kmaint's own", where, k))
			}
		}
	}
	labels("nodeMarking.duringReboot", m.DuringLabels())
	labels("nodeMarking.afterReboot", m.AfterLabels())
	for _, t := range m.DuringTaints() {
		if problems := validation.IsQualifiedName(t.Key); len(problems) > 0 {
			errs = append(errs, fmt.Errorf("nodeMarking.duringReboot taint key %q: %s", t.Key, strings.Join(problems, "; ")))
		}
		if problems := validation.IsValidLabelValue(string(t.Value)); len(problems) > 0 {
			errs = append(errs, fmt.Errorf("nodeMarking.duringReboot taint %s value %q: %s", t.Key, t.Value, strings.Join(problems, "; ")))
		}
		if ownKey(t.Key) || strings.HasPrefix(t.Key, "node.kubernetes.io/") || strings.HasPrefix(t.Key, "node.cloudprovider.kubernetes.io/") {
			errs = append(errs, fmt.Errorf("nodeMarking.duringReboot taint key %s is kmaint's or Kubernetes' own", t.Key))
		}
		if t.Effect != "NoSchedule" && t.Effect != "PreferNoSchedule" {
			errs = append(errs, fmt.Errorf("nodeMarking.duringReboot taint %s has effect %q; only NoSchedule and PreferNoSchedule are used (NoExecute would evict pods bypassing their PodDisruptionBudgets)", t.Key, t.Effect))
		}
	}
	return errors.Join(errs...)
}

// ownKey reports whether a label or taint key is under kmaint.io.
func ownKey(k string) bool {
	prefix, _, ok := strings.Cut(k, "/")
	return ok && (prefix == "kmaint.io" || strings.HasSuffix(prefix, ".kmaint.io"))
}
