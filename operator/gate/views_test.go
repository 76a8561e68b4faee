package gate

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/operator/gate/plan"
	"github.com/kmaint/kmaint/operator/gate/view"
	"github.com/kmaint/kmaint/policies"
)

// What each reconcile does with every view of a pool, at the scale of
// thousands of nodes.

func frozenView(name string, frozen, problems []string) *view.Node {
	v := &view.Node{NodeState: protocol.NodeState{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}}}
	v.Frozen, v.FreezeProblems = frozen, problems
	return v
}

// The pool's Blocked condition names the freezes of its waiting nodes, each
// once, and not those of a node that does not wait (one admitted under
// ignoreFreezes, say).
func TestAddFreezesNamesTheFreezesOfWaitingNodesOnce(t *testing.T) {
	st := &poolState{
		views: []*view.Node{
			frozenView("a", []string{"pool p: freeze release"}, nil),
			frozenView("b", []string{"pool p: freeze release"}, []string{"RebootPolicy q: freeze x cannot be read"}),
			frozenView("c", []string{"pool p: freeze audit"}, nil),
			frozenView("d", nil, nil),
		},
		admission: admission{plan: plan.Plan{Waiting: []string{"a", "b", "d"}}},
	}
	var in policies.WaitInput
	st.addFreezes(&in)
	if got, want := fmt.Sprint(in.Windows.Frozen), "[pool p: freeze release]"; got != want {
		t.Errorf("Frozen = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(in.Windows.FreezeProblems), "[RebootPolicy q: freeze x cannot be read]"; got != want {
		t.Errorf("FreezeProblems = %s, want %s", got, want)
	}
}

// A pool of 2000 nodes, 1900 of them waiting: with no freeze (a rollout),
// and with every waiting node under the same freeze.
func BenchmarkAddFreezes(b *testing.B) {
	for _, frozen := range []bool{false, true} {
		b.Run(fmt.Sprintf("frozen=%t", frozen), func(b *testing.B) {
			st := &poolState{}
			for i := range 2000 {
				name := fmt.Sprintf("node-%04d", i)
				var f []string
				if frozen && i >= 100 {
					f = []string{"pool p: freeze release"}
				}
				st.views = append(st.views, frozenView(name, f, nil))
				if i >= 100 {
					st.admission.plan.Waiting = append(st.admission.plan.Waiting, name)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				var in policies.WaitInput
				st.addFreezes(&in)
			}
		})
	}
}
