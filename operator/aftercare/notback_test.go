package aftercare

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

func TestDecideReturnWait(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC)
	const bound = 15 * time.Minute
	// gone is a node whose reboot of boot-0 was approved at t0 and that is
	// not back: its kubelet last reported boot-0, and it is NotReady.
	gone := func(opts ...gen.NodeOption) protocol.NodeState {
		all := append([]gen.NodeOption{gen.BootID("boot-0"), gen.NotReady(), gen.RequestedIDs("boot-0", v1alpha1.SourceConfig, t0, "c"),
			gen.ApprovedAt("boot-0", t0, "c")}, opts...)
		st, err := protocol.Read(gen.Node("n", all...))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	cases := map[string]struct {
		node protocol.NodeState
		now  time.Time

		// wantStep is what the gate does; wantWake when it looks again
		// (zero: no need to, the node's return is an event).
		wantStep returnStep
		wantWake time.Time
	}{
		"just approved: wait until the bound passes": {
			node: gone(), now: t0, wantStep: keepWaitingForReturn, wantWake: t0.Add(bound),
		},
		"a second short of the bound: keep waiting": {
			node: gone(), now: t0.Add(bound - time.Second), wantStep: keepWaitingForReturn, wantWake: t0.Add(bound),
		},
		"at the bound: report it": {
			node: gone(), now: t0.Add(bound), wantStep: reportNotBack,
		},
		"long past the bound (an operator that was down): report it": {
			node: gone(), now: t0.Add(24 * time.Hour), wantStep: reportNotBack,
		},
		"reported already: nothing more, the slot stays held": {
			node: gone(gen.NodeNotBack("boot-0", t0, t0.Add(bound))), now: t0.Add(2 * bound), wantStep: stillNotBack,
		},
		"a report of another approval is reported anew": {
			node: gone(gen.NodeNotBack("boot-old", t0.Add(-time.Hour), t0.Add(-time.Minute))), now: t0.Add(bound), wantStep: reportNotBack,
		},
		"Ready in the approved boot (the reboot hangs): timed the same": {
			node: gone(func(n *corev1.Node) { gen.SetReady(n, true) }), now: t0.Add(bound), wantStep: reportNotBack,
		},
		"a new boot that is not Ready is not back": {
			node: gone(gen.BootID("boot-1")), now: t0.Add(bound), wantStep: reportNotBack,
		},
		"an approval timed far in the future (by hand, or a clock far off): the wait starts now": {
			node: gone(gen.ApprovedAt("boot-0", t0.Add(24*time.Hour), "c")), now: t0, wantStep: startReturnWait, wantWake: t0.Add(bound),
		},
		"an approval timed within the clock skew ahead: waited on": {
			node: gone(gen.ApprovedAt("boot-0", t0.Add(time.Minute), "c")), now: t0, wantStep: keepWaitingForReturn, wantWake: t0.Add(time.Minute + bound),
		},
		"an approval without its time (an older operator's): the wait starts now": {
			node: gone(gen.Admitted("boot-0", t0.Add(-time.Hour), "c")), now: t0, wantStep: startReturnWait, wantWake: t0.Add(bound),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tc.node.AwaitingReturn()).To(BeTrue(), "the cases are of nodes not back from their reboot")
			step, wake := decideReturnWait(tc.node, tc.now, bound)
			g.Expect(step).To(Equal(tc.wantStep))
			g.Expect(wake).To(Equal(tc.wantWake))
		})
	}
}

// TestNodeNotBackIsDegradedUntilBack: the report makes the node degraded
// while it stays away, and stands for nothing once it is back, or its
// approval is gone.
func TestNodeNotBackIsDegradedUntilBack(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC)
	reported := gen.NodeNotBack("boot-0", t0, t0.Add(time.Minute))
	read := func(opts ...gen.NodeOption) protocol.NodeState {
		st, err := protocol.Read(gen.Node("n", append([]gen.NodeOption{gen.RequestedIDs("boot-0", v1alpha1.SourceConfig, t0, "c")}, opts...)...))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	cases := map[string]struct {
		node protocol.NodeState
		// wantDegraded: reported and still away; wantStale: the report is
		// to be removed.
		wantDegraded, wantStale bool
	}{
		"away, reported":               {node: read(gen.BootID("boot-0"), gen.NotReady(), gen.ApprovedAt("boot-0", t0, "c"), reported), wantDegraded: true},
		"away, not reported yet":       {node: read(gen.BootID("boot-0"), gen.NotReady(), gen.ApprovedAt("boot-0", t0, "c"))},
		"back, Ready with a new boot":  {node: read(gen.BootID("boot-1"), gen.ApprovedAt("boot-0", t0, "c"), reported), wantStale: true},
		"the approval is gone":         {node: read(gen.BootID("boot-1"), reported), wantStale: true},
		"a report of another approval": {node: read(gen.BootID("boot-0"), gen.NotReady(), gen.ApprovedAt("boot-0", t0, "c"), gen.NodeNotBack("boot-x", t0, t0)), wantStale: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tc.node.NodeNotBackReported()).To(Equal(tc.wantDegraded))
			g.Expect(tc.node.Degraded()).To(Equal(tc.wantDegraded))
			g.Expect(tc.node.NotBackStale()).To(Equal(tc.wantStale))
			if tc.wantDegraded {
				g.Expect(tc.node.Position(false).Stage).To(Equal(protocol.StageDegraded))
				g.Expect(tc.node.Position(false).Message).To(HavePrefix("not back: approved to reboot boot boot-0"))
			}
		})
	}
}
