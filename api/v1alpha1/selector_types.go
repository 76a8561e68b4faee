package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// LabelSelector selects nodes by their labels, exactly as a
// metav1.LabelSelector does, with every rule the selector's parser applies
// checked by the API server when the object is written. A pool with a
// selector that could not be parsed would not know its nodes: the schema
// refuses what it can, so that such a pool is rare (one stored before these
// rules), and the gate keeps the nodes such a pool may select from every
// pool (see the gate's package documentation).
//
// Its sizes are bounded (the CEL rules' cost is estimated from them); the
// bounds are far above what a pool's selector needs.
// +structType=atomic
type LabelSelector struct {
	// MatchLabels are {key: value} pairs a node's labels must all have. Keys
	// are label keys ([prefix/]name), values label values (at most 63
	// characters: alphanumerics, '-', '_' or '.', starting and ending with
	// an alphanumeric, or empty).
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253))",message="every key must be a label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of 1 to 63 alphanumerics, '-', '_' or '.' that starts and ends with an alphanumeric"
	// +optional
	MatchLabels map[string]SelectorValue `json:"matchLabels,omitempty"`

	// MatchExpressions are requirements a node's labels must all meet.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is one requirement on a node's labels: the label
// Key is In (or NotIn) the Values, or Exists (or DoesNotExist).
// +kubebuilder:validation:XValidation:rule="self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : !has(self.values) || size(self.values) == 0",message="values must list at least one value for the operators In and NotIn, and none for Exists and DoesNotExist",fieldPath=".values"
type LabelSelectorRequirement struct {
	// Key is the label key the requirement applies to: an optional DNS
	// subdomain prefix and '/', then a name of at most 63 characters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!self.contains('/') || self.indexOf('/') <= 253)",message="key must be a label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of 1 to 63 alphanumerics, '-', '_' or '.' that starts and ends with an alphanumeric"
	Key string `json:"key"`

	// Operator is In, NotIn, Exists or DoesNotExist.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator metav1.LabelSelectorOperator `json:"operator"`

	// Values are the label values for In and NotIn (at least one); Exists
	// and DoesNotExist take none.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Values []SelectorValue `json:"values,omitempty"`
}

// SelectorValue is a label value in a selector: at most 63 alphanumerics,
// '-', '_' or '.', starting and ending with an alphanumeric, or empty.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:XValidation:rule="self.matches('^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$')",message="must be a label value: at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric, or empty"
type SelectorValue string

// AsSelector parses the selector as the API's own label selectors are
// parsed. A nil selector selects nothing, an empty one every node.
func (s *LabelSelector) AsSelector() (labels.Selector, error) {
	if s == nil {
		return labels.Nothing(), nil
	}
	ls := &metav1.LabelSelector{}
	if s.MatchLabels != nil {
		ls.MatchLabels = make(map[string]string, len(s.MatchLabels))
		for k, v := range s.MatchLabels {
			ls.MatchLabels[k] = string(v)
		}
	}
	for _, r := range s.MatchExpressions {
		req := metav1.LabelSelectorRequirement{Key: r.Key, Operator: r.Operator}
		for _, v := range r.Values {
			req.Values = append(req.Values, string(v))
		}
		ls.MatchExpressions = append(ls.MatchExpressions, req)
	}
	return metav1.LabelSelectorAsSelector(ls)
}
