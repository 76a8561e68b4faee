package daemon

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/daemon/sentinel"
	"github.com/kmaint/kmaint/test/gen"
)

// planSentinelRequest is a sentinel request entry of boot with the
// fingerprint fp, as decide journals it.
func planSentinelRequest(boot, fp string) journal.Entry {
	return journal.Entry{Kind: journal.KindRequest, ID: sentinelRequestID(boot, fp), Source: v1alpha1.SourceSentinel,
		Reason: "sentinel", Sentinel: fp, Time: planAgo(time.Hour), BootID: boot}
}

// planSentinelState is the daemon's state annotation of boot with its
// sentinel's last request.
func planSentinelState(boot string, last *protocol.SentinelRequest) gen.NodeOption {
	return gen.Annotations(protocol.State, protocol.Encode(protocol.DaemonState{Phase: protocol.DaemonIdle, BootID: boot, Since: planAgo(time.Hour),
		Sentinel: &protocol.SentinelStatus{State: protocol.SentinelRequested, Since: planAgo(time.Hour), LastRequest: last}}))
}

// The sentinel's decision on a whole sync: what is journaled and what the
// state on the Node says, from the journal or, when the journal forgot the
// boot before, from the Node.
func TestDecideSentinel(t *testing.T) {
	needed := func(fp string) *sentinel.Observation {
		return &sentinel.Observation{Needed: true, Fingerprint: fp, Reason: "the host needs a reboot (reboot sentinel): packages libc6"}
	}
	prev := &protocol.SentinelRequest{BootID: planPrevBoot, ID: sentinelRequestID(planPrevBoot, "A"), Fingerprint: "A"}
	tests := map[string]struct {
		entries []journal.Entry
		node    []gen.NodeOption
		seen    *sentinel.Observation
		// want is the sentinel's state; wantWrite whether a sentinel
		// request is journaled; wantLast the last request the state names.
		want      protocol.SentinelState
		wantWrite bool
		wantLast  *protocol.SentinelRequest
		// wantEvent is whether the Node gets a Warning event.
		wantEvent bool
	}{
		"a new sentinel is journaled, remembered on the Node": {
			seen: needed("A"), want: protocol.SentinelRequested, wantWrite: true,
			wantLast: &protocol.SentinelRequest{BootID: planBoot, ID: sentinelRequestID(planBoot, "A"), Fingerprint: "A"},
		},
		"journaled and read back: not again": {
			entries: []journal.Entry{planSentinelRequest(planBoot, "A")}, seen: needed("A"), want: protocol.SentinelRequested,
			wantLast: &protocol.SentinelRequest{BootID: planBoot, ID: sentinelRequestID(planBoot, "A"), Fingerprint: "A"},
		},
		"packages added after the request: remembered as its latest look": {
			entries: []journal.Entry{planSentinelRequest(planBoot, "A")}, seen: needed("A2"), want: protocol.SentinelRequested,
			wantLast: &protocol.SentinelRequest{BootID: planBoot, ID: sentinelRequestID(planBoot, "A"), Fingerprint: "A", Latest: "A2"},
		},
		"unchanged after the reboot, persistent journal: loop held": {
			entries: []journal.Entry{planSentinelRequest(planPrevBoot, "A")}, seen: needed("A"),
			want: protocol.SentinelRebootLoop, wantLast: prev, wantEvent: true,
		},
		"unchanged after the reboot, volatile journal: the Node remembers, loop held": {
			node: []gen.NodeOption{planSentinelState(planPrevBoot, prev)}, seen: needed("A"),
			want: protocol.SentinelRebootLoop, wantLast: prev, wantEvent: true,
		},
		"as it was at the last look of the boot before (the Node knows), though not as it asked: loop held": {
			entries: []journal.Entry{planSentinelRequest(planPrevBoot, "A")},
			node:    []gen.NodeOption{planSentinelState(planPrevBoot, &protocol.SentinelRequest{BootID: planPrevBoot, ID: prev.ID, Fingerprint: "A", Latest: "A2"})},
			seen:    needed("A2"), want: protocol.SentinelRebootLoop, wantEvent: true,
			wantLast: &protocol.SentinelRequest{BootID: planPrevBoot, ID: prev.ID, Fingerprint: "A", Latest: "A2"},
		},
		"changed after the reboot: asked again": {
			entries: []journal.Entry{planSentinelRequest(planPrevBoot, "A")}, seen: needed("B"), want: protocol.SentinelRequested, wantWrite: true,
			wantLast: &protocol.SentinelRequest{BootID: planBoot, ID: sentinelRequestID(planBoot, "B"), Fingerprint: "B"},
		},
		"unreadable: reported, nothing journaled": {
			seen: &sentinel.Observation{Problem: "sentinel file: not a regular file"}, want: protocol.SentinelError, wantEvent: true,
		},
		"not looked at yet after a reboot: unknown, the last request kept": {
			node: []gen.NodeOption{planSentinelState(planPrevBoot, prev)}, want: protocol.SentinelUnknown, wantLast: prev,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p := decide(planFacts(facts{entries: tt.entries, sentinelEnabled: true, sentinel: tt.seen}, tt.node...))
			g.Expect(p.state.Sentinel).NotTo(BeNil())
			g.Expect(p.state.Sentinel.State).To(Equal(tt.want))
			g.Expect(p.state.Sentinel.LastRequest).To(Equal(tt.wantLast))
			g.Expect(p.sentinelEntered).To(Equal(tt.wantEvent))
			if tt.wantWrite {
				g.Expect(p.write).To(HaveLen(1))
				e := p.write[0].entry
				g.Expect(e.Source).To(Equal(v1alpha1.SourceSentinel))
				g.Expect(e.Sentinel).To(Equal(tt.seen.Fingerprint))
				g.Expect(e.Reason).To(Equal(tt.seen.Reason))
			} else {
				g.Expect(p.write).To(BeEmpty())
			}
			g.Expect(p.annotations).To(HaveKey(protocol.State), "the state changed")
		})
	}
}

// A daemon that watches no sentinel says nothing of one.
func TestDecideWithoutSentinel(t *testing.T) {
	g := NewWithT(t)
	p := decide(planFacts(facts{}))
	g.Expect(p.state.Sentinel).To(BeNil())
}
