package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The bounds of an object check (a blocking check's or a health check's
// objects and expression).
const (
	// MaxObjectCheckPods bounds the pods one evaluation of an object check
	// reads: a selection of more is an error that holds, never a pass. The
	// compile-time cost estimate counts `pods` as a list of at most this
	// many, so that it says what an evaluation may really cost.
	MaxObjectCheckPods = 1000
	// MaxObjectCheckExpression bounds an expression's length.
	MaxObjectCheckExpression = 4096
)

// CheckObjects are the Kubernetes objects an object check reads, and so the
// variables its expression sees: exactly one kind. kmaint reads them from
// the API server when the check runs, at most once per interval, with the
// operator's own rights (the chart lets it read every node and pod; a
// check of objects it may not read holds, as ObjectCheckForbidden, and
// never passes).
// +kubebuilder:validation:XValidation:rule="(has(self.node) ? 1 : 0) + (has(self.podsOnNode) ? 1 : 0) + (has(self.pods) ? 1 : 0) == 1",message="objects must name exactly one kind: node, podsOnNode or pods"
type CheckObjects struct {
	// Node is the node itself, as the variable `node` (the whole Node, read
	// from the API server as the check runs, less its managedFields). As a
	// blocking check it is evaluated for each node whose turn to be
	// admitted came; as a health check for each settling node.
	// +optional
	Node *NodeObjects `json:"node,omitempty"`

	// PodsOnNode is the node, as `node`, and the pods bound to it in every
	// namespace, as the list `pods`: evaluated for the same nodes as Node.
	// +optional
	PodsOnNode *PodsOnNodeObjects `json:"podsOnNode,omitempty"`

	// Pods are the pods of one namespace that match a label selector, as
	// the list `pods`, whatever node they run on: evaluated once for the
	// pool, for a blocking check and a health check alike (as a health
	// check, false is a bad result for every settling node).
	// +optional
	Pods *PodObjects `json:"pods,omitempty"`
}

// NodeObjects selects the node a check is evaluated for. It has no fields
// yet; it is an object so that it can grow some.
type NodeObjects struct{}

// PodsOnNodeObjects selects the pods bound to the node a check is
// evaluated for. It has no fields yet; it is an object so that it can grow
// some.
type PodsOnNodeObjects struct{}

// PodObjects selects pods by namespace and label selector.
type PodObjects struct {
	// Namespace is the pods' namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`

	// Selector selects the namespace's pods by label; unset selects them
	// all.
	// +optional
	Selector *PodLabelSelector `json:"selector,omitempty"`
}

// PodLabelSelector selects pods by their labels, as a LabelSelector does,
// with smaller bounds: it sits in lists of up to 16 checks (blocking and
// health), and the API server refuses a schema whose rules may cost more
// than its budget, which a LabelSelector's bounds there would.
// +structType=atomic
type PodLabelSelector struct {
	// MatchLabels are {key: value} pairs a pod's labels must all have.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253))",message="every key must be a label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of 1 to 63 alphanumerics, '-', '_' or '.' that starts and ends with an alphanumeric"
	// +optional
	MatchLabels map[string]SelectorValue `json:"matchLabels,omitempty"`

	// MatchExpressions are requirements a pod's labels must all meet.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	MatchExpressions []PodSelectorRequirement `json:"matchExpressions,omitempty"`
}

// PodSelectorRequirement is a LabelSelectorRequirement with at most 16
// values.
// +kubebuilder:validation:XValidation:rule="self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : !has(self.values) || size(self.values) == 0",message="values must list at least one value for the operators In and NotIn, and none for Exists and DoesNotExist",fieldPath=".values"
type PodSelectorRequirement struct {
	// Key is the label key the requirement applies to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!self.contains('/') || self.indexOf('/') <= 253)",message="key must be a label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of 1 to 63 alphanumerics, '-', '_' or '.' that starts and ends with an alphanumeric"
	Key string `json:"key"`

	// Operator is In, NotIn, Exists or DoesNotExist.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator metav1.LabelSelectorOperator `json:"operator"`

	// Values are the label values for In and NotIn (at least one, at most
	// 16); Exists and DoesNotExist take none.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	Values []SelectorValue `json:"values,omitempty"`
}

// AsSelector parses the selector as the API's own label selectors are
// parsed. A nil selector selects every pod.
func (s *PodLabelSelector) AsSelector() (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	ls := &LabelSelector{MatchLabels: s.MatchLabels}
	for _, r := range s.MatchExpressions {
		ls.MatchExpressions = append(ls.MatchExpressions, LabelSelectorRequirement(r))
	}
	return ls.AsSelector()
}

// ObjectCheck is the object check of a blocking check or a health check:
// the objects it reads and the CEL expression that must hold over them.
// It is nil for a PromQL check.
type ObjectCheck struct {
	Objects    CheckObjects
	Expression string
}

// ObjectCheck returns the blocking check's object check; nil for a PromQL
// query.
func (q BlockingQuery) ObjectCheck() *ObjectCheck {
	if q.Objects == nil {
		return nil
	}
	return &ObjectCheck{Objects: *q.Objects, Expression: q.Expression}
}

// ObjectCheck returns the health check's object check; nil for a PromQL
// query.
func (h HealthCheck) ObjectCheck() *ObjectCheck {
	if h.Objects == nil {
		return nil
	}
	return &ObjectCheck{Objects: *h.Objects, Expression: h.Expression}
}

// PerNode reports whether the check is evaluated for each node (node,
// podsOnNode) rather than once for the pool (pods).
func (o CheckObjects) PerNode() bool { return o.Pods == nil }
