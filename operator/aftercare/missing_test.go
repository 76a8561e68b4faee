package aftercare

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

func TestDecideDaemonWait(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC)
	const bound = 10 * time.Minute
	// back is a node back from the reboot approved for boot-0, Ready with
	// boot-1, whose daemon has not cleared the approved boot's requests.
	back := func(opts ...gen.NodeOption) protocol.NodeState {
		all := append([]gen.NodeOption{gen.BootID("boot-1"), gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h"),
			gen.Admitted("boot-0", t0, "h"), gen.Approved("boot-0")}, opts...)
		st, err := protocol.Read(gen.Node("n", all...))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	grace := min(daemonWaitGrace, bound/2)
	podGrace := min(daemonPodGrace, grace)
	cases := map[string]struct {
		node protocol.NodeState
		// seen is when the gate first saw the node back.
		seen, now time.Time
		// atFirstLook: the node was back at the gate's first look at its
		// pool (an operator started or restarted).
		atFirstLook bool

		// wantStep is what the gate does; wantWake when it looks again
		// (zero: no need to).
		wantStep daemonStep
		wantWake time.Time
	}{
		"first seen back: the wait is kept in memory, not written, until the daemon is late": {
			node: back(), seen: t0, now: t0, wantStep: keepWaitingForDaemon, wantWake: t0.Add(podGrace),
		},
		"the daemon late: its failed pods are deleted, the wait still in memory": {
			node: back(), seen: t0, now: t0.Add(podGrace), wantStep: clearDaemonPods, wantWake: t0.Add(grace),
		},
		"within the grace: still not written": {
			node: back(), seen: t0, now: t0.Add(grace - time.Nanosecond), wantStep: clearDaemonPods, wantWake: t0.Add(grace),
		},
		"past the grace: the wait is written, counting from the first sight": {
			node: back(), seen: t0, now: t0.Add(grace), wantStep: startDaemonWait, wantWake: t0.Add(bound),
		},
		"back at the gate's first look: written at once, from now": {
			node: back(), seen: t0, now: t0, atFirstLook: true, wantStep: startDaemonWait, wantWake: t0.Add(bound),
		},
		"back at the gate's first look, the wait written: keep waiting until the bound": {
			node: back(gen.RebootUnconfirmed("boot-0", "boot-1", t0)), seen: t0.Add(time.Second), now: t0.Add(time.Second), atFirstLook: true,
			wantStep: keepWaitingForDaemon, wantWake: t0.Add(bound),
		},
		"a wait recorded for another approval starts anew": {
			node: back(gen.RebootUnconfirmed("boot-old", "boot-0", t0.Add(-time.Hour))), seen: t0, now: t0, wantStep: keepWaitingForDaemon, wantWake: t0.Add(podGrace),
		},
		"within the bound: keep waiting until it passes": {
			node: back(gen.RebootUnconfirmed("boot-0", "boot-1", t0)), seen: t0.Add(5 * time.Minute), now: t0.Add(bound - time.Second), wantStep: keepWaitingForDaemon, wantWake: t0.Add(bound),
		},
		"at the bound: complete without the daemon": {
			node: back(gen.RebootUnconfirmed("boot-0", "boot-1", t0)), seen: t0.Add(bound), now: t0.Add(bound), wantStep: completeWithoutDaemon,
		},
		"long past the bound (an operator that was down): complete": {
			node: back(gen.RebootUnconfirmed("boot-0", "boot-1", t0)), seen: t0.Add(24 * time.Hour), now: t0.Add(24 * time.Hour), wantStep: completeWithoutDaemon,
		},
		"the wait counts from the first sight, whatever boot the node shows now": {
			node: back(gen.RebootUnconfirmed("boot-0", "boot-2", t0)), seen: t0.Add(bound), now: t0.Add(bound), wantStep: completeWithoutDaemon,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tc.node.AwaitingDaemon()).To(BeTrue(), "the cases are of nodes awaiting their daemon")
			step, wake := decideDaemonWait(tc.node, backSighting{approvedBoot: "boot-0", at: tc.seen, atFirstLook: tc.atFirstLook}, tc.now, bound)
			g.Expect(step).To(Equal(tc.wantStep))
			g.Expect(wake).To(Equal(tc.wantWake))
		})
	}
}
