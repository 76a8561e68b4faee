package drainstep

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

// A marking the schema would refuse (a pool stored before its rules) is
// refused; labels that another pool's selector matches, or that their own
// pool's no longer would, are not: they move no node in flight.
func TestMarkingProblem(t *testing.T) {
	a := gen.Pool("a", intstr.FromInt32(1))
	for name, tc := range map[string]struct {
		labels map[string]v1alpha1.MarkValue
		taints []v1alpha1.MarkTaint
		// want is a part of the refusal; empty when the marks may go on.
		want string
	}{
		"harmless":           {labels: map[string]v1alpha1.MarkValue{"node.kubernetes.io/exclude-from-external-load-balancers": "true"}},
		"own selector key":   {labels: map[string]v1alpha1.MarkValue{"pool": "b"}},
		"another pool's key": {labels: map[string]v1alpha1.MarkValue{"tier": "canary"}},
		"stored NoExecute":   {taints: []v1alpha1.MarkTaint{{Key: "x", Effect: "NoExecute"}}, want: "NoExecute"},
		"stored kmaint key":  {labels: map[string]v1alpha1.MarkValue{"kmaint.io/admitted": "x"}, want: "under kmaint.io"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			pool := a.DeepCopy()
			pool.Spec.NodeMarking = &v1alpha1.NodeMarking{DuringReboot: &v1alpha1.DuringRebootMarks{Labels: tc.labels, Taints: tc.taints}}
			got := MarkingProblem(pool.Spec.NodeMarking)
			if tc.want == "" {
				g.Expect(got).To(BeEmpty())
				return
			}
			g.Expect(got).To(ContainSubstring(tc.want))
		})
	}
}
