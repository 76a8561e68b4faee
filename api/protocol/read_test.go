package protocol_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

var t0 = time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC)

// TestReadMalformed: every malformed form of every JSON annotation is
// reported by name, and the node it is on is never admitted, approved or
// taken for rebooted, and keeps its slot when it may be in flight.
func TestReadMalformed(t *testing.T) {
	every := map[string]string{
		"empty":        "",
		"truncated":    "{",
		"not JSON":     "garbage",
		"a string":     `"boot-0"`,
		"a number":     "1e400",
		"an array":     "[]",
		"a bad bootID": `{"bootID": 7}`,
	}
	forms := map[string]map[string]string{
		protocol.RebootRequested: {
			"requests not a list": `{"bootID":"boot-0","requests":{"id":"x"}}`,
			"a bad request time":  `{"bootID":"boot-0","requests":[{"id":"x","time":"yesterday"}]}`,
		},
		protocol.Admitted:          {"a bad time": `{"bootID":"boot-0","time":"yesterday"}`, "requests not a list": `{"bootID":"boot-0","requests":"x"}`},
		protocol.DrainFailed:       {"a bad time": `{"bootID":"boot-0","time":"yesterday"}`},
		protocol.State:             {"a bad since": `{"phase":"idle","since":"yesterday"}`, "a bad phase": `{"phase":1}`},
		protocol.RebootUnconfirmed: {"a bad since": `{"approvedBoot":"boot-0","bootID":"boot-1","since":"yesterday"}`},
	}
	for key, extra := range forms {
		for form, value := range every {
			extra[form] = value
		}
		for form, value := range extra {
			t.Run(key+"/"+form, func(t *testing.T) {
				g := NewWithT(t)
				// A node that would otherwise be taken for rebooted: Ready
				// in a new boot, approved for the old one, with requests in
				// its current boot.
				st, err := protocol.Read(gen.Node("n", gen.BootID("boot-1"),
					gen.RequestedIDs("boot-1", v1alpha1.SourceHost, t0, "h1"), gen.Approved("boot-0"), gen.Annotations(key, value)))
				g.Expect(err).To(MatchError(ContainSubstring("annotation " + key + " on node n is malformed")))
				g.Expect(st.Unreadable).To(Equal(err))
				g.Expect(st.WantsAdmission()).To(BeFalse(), "never admitted")
				g.Expect(st.RebootDone()).To(BeFalse(), "never taken for rebooted")
				g.Expect(st.AdmissionVoid()).To(BeFalse(), "its admission is never released on a guess")
				g.Expect(st.AwaitingDaemon()).To(BeFalse(), "never completed without its daemon on a guess")
				g.Expect(st.UnconfirmedStale()).To(BeFalse(), "what it says of its daemon is never dropped on a guess")
				g.Expect(st.Degraded()).To(BeTrue(), "degraded: it needs a person")
				pos := st.Position(false)
				g.Expect(pos.Stage).To(Equal(protocol.StageDegraded))
				g.Expect(pos.Message).To(ContainSubstring(key))
				if key == protocol.Admitted {
					g.Expect(st.Unavailable()).To(BeTrue(), "an unreadable admission keeps its slot")
				}
			})
		}
	}
}

// TestReadApprovalNotTheGates: an approval the gate did not write (none
// of the boot it admitted) is unreadable, so a Ready node in another boot
// is never taken for rebooted, and the node keeps its slot.
func TestReadApprovalNotTheGates(t *testing.T) {
	cases := map[string]struct {
		approval []gen.NodeOption
		want     string
	}{
		"garbage, no admission": {
			approval: []gen.NodeOption{gen.Annotations(protocol.RebootApproved, "garbage")},
			want:     `annotation kmaint.io/reboot-approved on node n is "garbage", but the node has no kmaint.io/admitted annotation`,
		},
		"garbage beside an admission": {
			approval: []gen.NodeOption{gen.Admitted("boot-0", t0, "h"), gen.Annotations(protocol.RebootApproved, "garbage")},
			want:     `annotation kmaint.io/reboot-approved on node n is "garbage", but the node was admitted for boot "boot-0"`,
		},
		"another boot than the admitted one": {
			approval: []gen.NodeOption{gen.Admitted("boot-0", t0, "h"), gen.Annotations(protocol.RebootApproved, "boot-9")},
			want:     `is "boot-9", but the node was admitted for boot "boot-0"`,
		},
		"a long value is cut": {
			approval: []gen.NodeOption{gen.Annotations(protocol.RebootApproved, strings.Repeat("x", 500)+"\x1b[2J")},
			want:     `"` + strings.Repeat("x", 64) + `"…, but the node has no`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			// Ready in a new boot, its old boot's requests gone: what a
			// completed reboot looks like.
			opts := append([]gen.NodeOption{gen.BootID("boot-1")}, tc.approval...)
			st, err := protocol.Read(gen.Node("n", opts...))
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
			g.Expect(st.RebootDone()).To(BeFalse(), "never taken for rebooted")
			g.Expect(st.Unavailable()).To(BeTrue(), "keeps its slot")
			g.Expect(st.AdmissionVoid()).To(BeFalse())
			g.Expect(st.Degraded()).To(BeTrue())
			g.Expect(st.Position(false).Stage).To(Equal(protocol.StageDegraded))
		})
	}
}

// TestReadKeepsWhatItCan: one unreadable annotation does not hide the rest.
func TestReadKeepsWhatItCan(t *testing.T) {
	g := NewWithT(t)
	st, err := protocol.Read(gen.Node("n",
		gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h"),
		gen.Annotations(protocol.State, "{", protocol.CurrentConfig, "v2"),
	))
	g.Expect(err).To(HaveOccurred())
	g.Expect(st.Current()).NotTo(BeNil())
	g.Expect(st.CurrentConfig).To(Equal("v2"))
	g.Expect(st.WantsAdmission()).To(BeFalse())
}

func TestReadPredicates(t *testing.T) {
	cases := map[string]struct {
		node *corev1.Node

		wantCurrent     bool
		wantWants       bool
		wantUnavailable bool
		wantDone        bool
		wantVoid        bool
		wantDegraded    bool
		wantAwaiting    bool
		wantMissing     bool
		wantStale       bool
		wantStage       protocol.Stage
	}{
		"idle": {node: gen.Node("n"), wantStage: protocol.StageIdle},
		"requests of an earlier boot are satisfied": {
			node: gen.Node("n", gen.RequestedIDs("boot-old", v1alpha1.SourceHost, t0, "h")), wantStage: protocol.StageIdle,
		},
		"an empty request list asks nothing": {
			node: gen.Node("n", gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0)), wantStage: protocol.StageIdle,
		},
		"requested": {
			node:        gen.Node("n", gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h")),
			wantCurrent: true, wantWants: true, wantStage: v1alpha1.PhaseRequested,
		},
		"admitted: draining": {
			node:        gen.Node("n", gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h"), gen.Admitted("boot-0", t0, "h")),
			wantCurrent: true, wantUnavailable: true, wantStage: v1alpha1.PhaseDraining,
		},
		"approved, daemon not yet rebooting": {
			node:        gen.Node("n", gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h"), gen.Admitted("boot-0", t0, "h"), gen.Approved("boot-0")),
			wantCurrent: true, wantUnavailable: true, wantStage: v1alpha1.PhaseApproved,
		},
		"approved, daemon rebooting": {
			node: gen.Node("n", gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h"), gen.Admitted("boot-0", t0, "h"),
				gen.Approved("boot-0"), gen.DaemonState(protocol.DaemonRebooting, "boot-0", "m", t0)),
			wantCurrent: true, wantUnavailable: true, wantStage: v1alpha1.PhaseRebooting,
		},
		"back with a new boot, Ready: done": {
			node:            gen.Node("n", gen.Approved("boot-old"), gen.Admitted("boot-old", t0, "h")),
			wantUnavailable: true, wantDone: true, wantStage: v1alpha1.PhaseRebooting,
		},
		"back but not Ready: not done": {
			node:            gen.Node("n", gen.Approved("boot-old"), gen.NotReady()),
			wantUnavailable: true, wantStage: v1alpha1.PhaseRebooting,
		},
		"back, but the daemon still shows the old boot's requests: not done": {
			node:            gen.Node("n", gen.Approved("boot-old"), gen.RequestedIDs("boot-old", v1alpha1.SourceHost, t0, "h")),
			wantUnavailable: true, wantAwaiting: true, wantStage: v1alpha1.PhaseRebooting,
		},
		"Ready with the approved boot: not rebooted": {
			node:            gen.Node("n", gen.Approved("boot-0")),
			wantUnavailable: true, wantStage: v1alpha1.PhaseApproved,
		},
		"an admission whose requests are gone is void": {
			node:            gen.Node("n", gen.Admitted("boot-0", t0, "h")),
			wantUnavailable: true, wantVoid: true, wantStage: v1alpha1.PhaseDraining,
		},
		"an admission of another boot is void": {
			node:        gen.Node("n", gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h"), gen.Admitted("boot-old", t0, "h")),
			wantCurrent: true, wantUnavailable: true, wantVoid: true, wantStage: v1alpha1.PhaseDraining,
		},
		"a failed drain of these requests: degraded, not asked again": {
			node:        gen.Node("n", gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h"), gen.DrainFailed("boot-0", t0, "pdb", "h")),
			wantCurrent: true, wantDegraded: true, wantStage: protocol.StageDegraded,
		},
		"a new request after a failed drain asks again": {
			node:        gen.Node("n", gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h", "h2"), gen.DrainFailed("boot-0", t0, "pdb", "h")),
			wantCurrent: true, wantWants: true, wantStage: v1alpha1.PhaseRequested,
		},
		"the daemon says the reboot did not happen": {
			node: gen.Node("n", gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h"), gen.Approved("boot-0"),
				gen.DaemonState(protocol.DaemonDegraded, "boot-0", "m", t0)),
			wantCurrent: true, wantUnavailable: true, wantDegraded: true, wantStage: protocol.StageDegraded,
		},
		"the daemon said the reboot did not happen, and it did: not degraded": {
			// The reboot was slower than the daemon's timeout; the daemon
			// of the new boot has not rewritten its state yet.
			node: gen.Node("n", gen.BootID("boot-1"), gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h"), gen.Approved("boot-0"),
				gen.DaemonState(protocol.DaemonDegraded, "boot-0", "m", t0)),
			wantUnavailable: true, wantAwaiting: true, wantStage: v1alpha1.PhaseRebooting,
		},
		"back and Ready, the daemon has not confirmed: awaiting it": {
			node:            gen.Node("n", gen.BootID("boot-1"), gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h"), gen.Approved("boot-0"), gen.Admitted("boot-0", t0, "h")),
			wantUnavailable: true, wantAwaiting: true, wantStage: v1alpha1.PhaseRebooting,
		},
		"back but not Ready, the daemon has not confirmed: not awaiting it yet": {
			node:            gen.Node("n", gen.BootID("boot-1"), gen.NotReady(), gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h"), gen.Approved("boot-0")),
			wantUnavailable: true, wantStage: v1alpha1.PhaseRebooting,
		},
		"completed without its daemon, which is still away: degraded, available": {
			node:         gen.Node("n", gen.BootID("boot-1"), gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h"), gen.RebootUnconfirmed("boot-0", "boot-1", t0)),
			wantDegraded: true, wantMissing: true, wantStage: protocol.StageDegraded,
		},
		"completed without its daemon, which came back and cleared its requests: stale": {
			node:      gen.Node("n", gen.BootID("boot-1"), gen.RebootUnconfirmed("boot-0", "boot-1", t0)),
			wantStale: true, wantStage: protocol.StageIdle,
		},
		"completed without its daemon, which came back with new requests: stale, asks again": {
			node:        gen.Node("n", gen.BootID("boot-1"), gen.RequestedIDs("boot-1", v1alpha1.SourceHost, t0, "h2"), gen.RebootUnconfirmed("boot-0", "boot-1", t0)),
			wantCurrent: true, wantWants: true, wantStale: true, wantStage: v1alpha1.PhaseRequested,
		},
		"cordoned by a person: unavailable, still asks": {
			node:        gen.Node("n", gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h"), gen.Unschedulable()),
			wantCurrent: true, wantWants: true, wantUnavailable: true, wantStage: v1alpha1.PhaseRequested,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			st, err := protocol.Read(tc.node)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.Current() != nil).To(Equal(tc.wantCurrent), "current")
			g.Expect(st.WantsAdmission()).To(Equal(tc.wantWants), "wants admission")
			g.Expect(st.Unavailable()).To(Equal(tc.wantUnavailable), "unavailable")
			g.Expect(st.RebootDone()).To(Equal(tc.wantDone), "reboot done")
			g.Expect(st.AdmissionVoid()).To(Equal(tc.wantVoid), "admission void")
			g.Expect(st.Degraded()).To(Equal(tc.wantDegraded), "degraded")
			g.Expect(st.AwaitingDaemon()).To(Equal(tc.wantAwaiting), "awaiting its daemon")
			g.Expect(st.DaemonMissing()).To(Equal(tc.wantMissing), "daemon missing")
			g.Expect(st.UnconfirmedStale()).To(Equal(tc.wantStale), "daemon-missing stale")
			g.Expect(st.Position(false).Stage).To(Equal(tc.wantStage), "stage")
		})
	}
}

func TestPositionPending(t *testing.T) {
	g := NewWithT(t)
	st, _ := protocol.Read(gen.Node("n"))
	g.Expect(st.Position(true).Stage).To(Equal(v1alpha1.PhasePending), "an open NodeMaintenance not yet raised")
	st, _ = protocol.Read(gen.Node("n", gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h")))
	g.Expect(st.Position(true).Stage).To(Equal(v1alpha1.PhaseRequested), "raised requests are further along")
}

// InFlight is the stage of an admitted node, at the hooks of its admission
// or not, without what degrades it; Position says the degradation first.
func TestInFlight(t *testing.T) {
	g := NewWithT(t)
	st, _ := protocol.Read(gen.Node("n", gen.BootID("boot-0"), gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h")))
	_, ok := st.InFlight()
	g.Expect(ok).To(BeFalse(), "a node that only asks is not in flight")

	node := gen.Node("n", gen.BootID("boot-0"), gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h"), gen.Admitted("boot-0", t0, "h"))
	protocol.RecordHooks(protocol.HookRecord{Point: protocol.BeforeDrain, BootID: "boot-0", Since: t0,
		Hooks: []protocol.HookProgress{{Name: "db-stepdown"}}}).Apply(node)
	st, _ = protocol.Read(node)
	pos, ok := st.InFlight()
	g.Expect(ok).To(BeTrue())
	g.Expect(pos.Stage).To(Equal(v1alpha1.PhaseDraining))
	g.Expect(pos.Message).To(ContainSubstring("waiting for hook db-stepdown (beforeDrain)"))
	g.Expect(st.Position(false)).To(Equal(pos))

	// A record of another boot is no hook of this admission.
	protocol.RecordHooks(protocol.HookRecord{Point: protocol.BeforeDrain, BootID: "boot-old", Since: t0,
		Hooks: []protocol.HookProgress{{Name: "db-stepdown"}}}).Apply(node)
	st, _ = protocol.Read(node)
	pos, _ = st.InFlight()
	g.Expect(pos).To(Equal(protocol.Position{Stage: v1alpha1.PhaseDraining, Since: t0}))

	st, _ = protocol.Read(gen.Node("n", gen.BootID("boot-0"), gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h"),
		gen.ApprovedAt("boot-0", t0, "h"), gen.DaemonState(protocol.DaemonDegraded, "boot-0", "logind refused", t0)))
	pos, _ = st.InFlight()
	g.Expect(pos.Stage).To(Equal(v1alpha1.PhaseApproved), "approved, whatever its daemon says")
	g.Expect(st.Position(false).Stage).To(Equal(protocol.StageDegraded), "a daemon that did not reboot degrades the node")
}
