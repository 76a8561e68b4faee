package plan

import (
	"maps"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/operator/gate/view"
	"github.com/kmaint/kmaint/test/gen"
)

func TestApprovable(t *testing.T) {
	// draining builds a node admitted d after t0, cordoned by kmaint.
	draining := func(name string, d time.Duration, opts ...gen.NodeOption) *corev1.Node {
		opts = append([]gen.NodeOption{gen.Unschedulable(), gen.Annotations(protocol.Cordoned, "true"), gen.Admitted("boot-0", t0.Add(d), name)}, opts...)
		return gen.Node(name, opts...)
	}
	rebooting := gen.Node("r", gen.NotReady(), gen.Approved("boot-0"), gen.Admitted("boot-0", t0))
	cases := map[string]struct {
		nodes []*corev1.Node
		// counted counts the nodes that count against the budget besides
		// the views: the pool's quiet members rebooting.
		counted        int
		maxUnavailable int

		// wantOK are the draining nodes that may be approved now.
		wantOK []string
		// wantUsed is how many nodes count against the budget.
		wantUsed int
	}{
		"one drained node in budget": {nodes: []*corev1.Node{draining("a", 0), gen.Node("idle")}, maxUnavailable: 1, wantOK: []string{"a"}, wantUsed: 1},
		"a budget lowered from 3 to 1: the first admitted goes": {
			nodes: []*corev1.Node{draining("c", 2*time.Second), draining("a", 0), draining("b", time.Second)}, maxUnavailable: 1,
			wantOK: []string{"a"}, wantUsed: 3,
		},
		"a rebooting node takes the only slot": {nodes: []*corev1.Node{rebooting, draining("a", 0)}, maxUnavailable: 1, wantUsed: 2},
		"room for two": {
			nodes: []*corev1.Node{rebooting, draining("a", 0), draining("b", time.Second), draining("c", 2*time.Second)}, maxUnavailable: 3,
			wantOK: []string{"a", "b"}, wantUsed: 4,
		},
		"cordoned by a person before: it costs nothing, a node kmaint cordoned waits": {
			nodes: []*corev1.Node{rebooting, draining("a", 0),
				gen.Node("p", gen.Unschedulable(), gen.Admitted("boot-0", t0.Add(time.Second)))},
			maxUnavailable: 2, wantOK: []string{"p"}, wantUsed: 3,
		},
		"not Ready: it costs nothing": {
			nodes:          []*corev1.Node{rebooting, draining("n", 0, gen.NotReady())},
			maxUnavailable: 2, wantOK: []string{"n"}, wantUsed: 2,
		},
		"over budget, even a free approval waits": {
			nodes:          []*corev1.Node{rebooting, gen.Node("down", gen.NotReady()), draining("n", 0, gen.NotReady())},
			maxUnavailable: 2, wantUsed: 3,
		},
		"a budget of zero approves nothing": {nodes: []*corev1.Node{draining("a", 0)}, maxUnavailable: 0, wantUsed: 1},
		"a quiet member rebooting holds its slot": {
			nodes: []*corev1.Node{draining("a", 0)}, counted: 1, maxUnavailable: 1, wantUsed: 2,
		},
		"a quiet member rebooting leaves room for one more": {
			nodes: []*corev1.Node{draining("a", 0), draining("b", time.Second)}, counted: 1, maxUnavailable: 2,
			wantOK: []string{"a"}, wantUsed: 3,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var views []*view.Node
			for _, n := range tc.nodes {
				views = append(views, view.Read(n))
			}
			ok, used := Approvable(views, tc.counted, tc.maxUnavailable)
			g.Expect(slices.Sorted(maps.Keys(ok))).To(Equal(tc.wantOK))
			g.Expect(used).To(Equal(tc.wantUsed))
		})
	}
}
