package pools

import (
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

func TestOf(t *testing.T) {
	pool := func(name string, sel *v1alpha1.LabelSelector) v1alpha1.MaintenancePool {
		return v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.MaintenancePoolSpec{NodeSelector: sel}}
	}
	labelled := func(kv ...string) *v1alpha1.LabelSelector {
		s := &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.SelectorValue{}}
		for i := 0; i < len(kv); i += 2 {
			s.MatchLabels[kv[i]] = v1alpha1.SelectorValue(kv[i+1])
		}
		return s
	}
	// with adds a requirement to a selector.
	with := func(s *v1alpha1.LabelSelector, key string, op metav1.LabelSelectorOperator, values ...v1alpha1.SelectorValue) *v1alpha1.LabelSelector {
		s.MatchExpressions = append(s.MatchExpressions, v1alpha1.LabelSelectorRequirement{Key: key, Operator: op, Values: values})
		return s
	}
	cases := map[string]struct {
		pools  []v1alpha1.MaintenancePool
		labels map[string]string
		// want are the node's pools; wantErr the pools whose selector
		// cannot be parsed.
		want    []string
		wantErr []string
	}{
		"one pool":                  {pools: []v1alpha1.MaintenancePool{pool("a", labelled("pool", "a"))}, labels: map[string]string{"pool": "a"}, want: []string{"a"}},
		"no pool: the default":      {pools: []v1alpha1.MaintenancePool{pool("a", labelled("pool", "a"))}, labels: map[string]string{"pool": "b"}, want: []string{"default"}},
		"two pools":                 {pools: []v1alpha1.MaintenancePool{pool("b", labelled("zone", "z")), pool("a", labelled("pool", "a"))}, labels: map[string]string{"pool": "a", "zone": "z"}, want: []string{"a", "b"}},
		"a pool without a selector": {pools: []v1alpha1.MaintenancePool{pool("a", nil)}, labels: map[string]string{"pool": "a"}, want: []string{"default"}},
		"the default pool's object": {pools: []v1alpha1.MaintenancePool{pool("default", nil)}, want: []string{"default"}},
		"an empty selector: all":    {pools: []v1alpha1.MaintenancePool{pool("all", &v1alpha1.LabelSelector{})}, labels: map[string]string{"x": "y"}, want: []string{"all"}},
		"a node the parsable part of an invalid selector matches is in doubt": {
			pools:  []v1alpha1.MaintenancePool{pool("broken", with(labelled("pool", "broken"), "zone", "Equals", "a"))},
			labels: map[string]string{"pool": "broken"}, want: []string{"broken", "default"}, wantErr: []string{"broken"},
		},
		"a node failing a parsable requirement is not in doubt": {
			pools:  []v1alpha1.MaintenancePool{pool("broken", with(labelled("pool", "broken"), "zone", "Equals", "a"))},
			labels: map[string]string{"pool": "other"}, want: []string{"default"}, wantErr: []string{"broken"},
		},
		"a node in a valid pool too is in doubt there": {
			pools: []v1alpha1.MaintenancePool{
				pool("broken", with(with(&v1alpha1.LabelSelector{}, "zone", metav1.LabelSelectorOpIn, "a"), "rack", metav1.LabelSelectorOpIn)),
				pool("blue", labelled("pool", "blue")),
			},
			labels: map[string]string{"pool": "blue", "zone": "a"}, want: []string{"blue", "broken"}, wantErr: []string{"broken"},
		},
		"nothing parses: every node is in doubt": {
			pools:  []v1alpha1.MaintenancePool{pool("broken", with(labelled("bad key", "x"), "zone", metav1.LabelSelectorOpExists, "a"))},
			labels: map[string]string{"anything": "at-all"}, want: []string{"broken", "default"}, wantErr: []string{"broken"},
		},
		"a bad label value": {
			pools:  []v1alpha1.MaintenancePool{pool("broken", labelled("pool", "bad value!"))},
			labels: map[string]string{}, want: []string{"broken", "default"}, wantErr: []string{"broken"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			sel := Selectors(tc.pools)
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: tc.labels}}
			g.Expect(Of(node, sel)).To(Equal(tc.want))
			for _, p := range tc.pools {
				if err := sel.Err(p.Name); slices.Contains(tc.wantErr, p.Name) {
					g.Expect(err).To(MatchError(ContainSubstring("spec.nodeSelector cannot be parsed")), p.Name)
				} else {
					g.Expect(err).NotTo(HaveOccurred(), p.Name)
				}
			}
		})
	}
}
