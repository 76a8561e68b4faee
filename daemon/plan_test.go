package daemon

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/test/gen"
)

// The boots of the node under test, oldest first; planBoot is the current one.
const (
	planOldBoot  = "0a0a0a0a-0000-4000-8000-000000000001"
	planPrevBoot = "0b0b0b0b-0000-4000-8000-000000000002"
	planBoot     = "0c0c0c0c-0000-4000-8000-000000000003"

	planTimeout = 10 * time.Minute
)

// planNow is the clock of a sync; entries are written before it.
var planNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// planAgo returns planNow minus d.
func planAgo(d time.Duration) time.Time { return planNow.Add(-d) }

// planFacts fills what a test leaves out: now, this boot, the node in it
// with these options (its annotations), the reboot timeout, and the
// operator's naming of the node's NodeMaintenances: those of maintenances,
// unless the test names its own.
func planFacts(f facts, node ...gen.NodeOption) facts {
	if f.now.IsZero() {
		f.now = planNow
	}
	if f.apiRequests == nil {
		f.apiRequests = []protocol.APIRequest{}
		for _, nm := range f.maintenances {
			f.apiRequests = append(f.apiRequests, protocol.APIRequest{Name: nm.Name, UID: nm.UID})
		}
	}
	f.apiRequestsKnown = true
	f.bootID = planBoot
	f.node = gen.Node("n1", append([]gen.NodeOption{gen.BootID(planBoot)}, node...)...)
	f.rebootTimeout = planTimeout
	return f
}

// planRequest is a request entry as the journal hands it back.
func planRequest(id string, source v1alpha1.Source, boot string, at time.Time) journal.Entry {
	return journal.Entry{Kind: journal.KindRequest, ID: id, Source: source, Reason: "reason " + id, Time: at, BootID: boot}
}

// planConfigRequest is a config request entry, with the id decide gives it.
func planConfigRequest(config, boot string, at time.Time) journal.Entry {
	return journal.Entry{Kind: journal.KindRequest, ID: v1alpha1.ConfigRequestID(boot, config), Source: v1alpha1.SourceConfig,
		Reason: "config change", Config: config, Time: at, BootID: boot}
}

// planRebooting is a rebooting entry as the journal hands it back.
func planRebooting(boot string, at time.Time, ids ...string) journal.Entry {
	return journal.Entry{Kind: journal.KindRebooting, Requests: ids, Time: at, BootID: boot}
}

// planNM is a NodeMaintenance of the node under test.
func planNM(uid string, source v1alpha1.Source, phase v1alpha1.Phase, journaledBoot string) v1alpha1.NodeMaintenance {
	nm := v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: "nm-" + uid, UID: types.UID(uid)},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: "n1", Type: "Reboot", Reason: "why " + uid, Source: source},
		Status:     v1alpha1.NodeMaintenanceStatus{Phase: phase, JournaledBootID: journaledBoot},
	}
	if journaledBoot != "" {
		nm.Status.JournaledTime = &metav1.Time{Time: planAgo(time.Hour)}
	}
	return nm
}

func TestDecideJournalsAcceptedMaintenancesOnce(t *testing.T) {
	tests := map[string]struct {
		maintenances []v1alpha1.NodeMaintenance
		// named are the NodeMaintenances the operator names on the node;
		// nil for those of maintenances.
		named   []protocol.APIRequest
		entries []journal.Entry
		// wantWrite are the request entries journaled.
		wantWrite []journal.Entry
		// wantReportFirst are the records told before journaling, one per
		// entry of wantWrite (nil for none).
		wantReportFirst []*report
	}{
		"an accepted api request is reported in this boot, then journaled with its id, source and reason": {
			maintenances:    []v1alpha1.NodeMaintenance{planNM("uid-1", v1alpha1.SourceAPI, v1alpha1.PhasePending, "")},
			wantWrite:       []journal.Entry{{Kind: journal.KindRequest, ID: "uid-1", Source: v1alpha1.SourceAPI, Reason: "why uid-1", Time: planNow}},
			wantReportFirst: []*report{{name: "nm-uid-1", bootID: planBoot, time: planNow}},
		},
		"an accepted metric request is journaled with its source": {
			maintenances:    []v1alpha1.NodeMaintenance{planNM("uid-1", v1alpha1.SourceMetric, v1alpha1.PhasePending, "")},
			wantWrite:       []journal.Entry{{Kind: journal.KindRequest, ID: "uid-1", Source: v1alpha1.SourceMetric, Reason: "why uid-1", Time: planNow}},
			wantReportFirst: []*report{{name: "nm-uid-1", bootID: planBoot, time: planNow}},
		},
		"reported in this boot but missing from the journal (the write failed): journaled, not reported again": {
			maintenances:    []v1alpha1.NodeMaintenance{planNM("uid-1", v1alpha1.SourceAPI, v1alpha1.PhaseRequested, planBoot)},
			wantWrite:       []journal.Entry{{Kind: journal.KindRequest, ID: "uid-1", Source: v1alpha1.SourceAPI, Reason: "why uid-1", Time: planNow}},
			wantReportFirst: []*report{nil},
		},
		"reported in an earlier boot, which a volatile journal lost: not journaled again": {
			maintenances: []v1alpha1.NodeMaintenance{planNM("uid-1", v1alpha1.SourceAPI, v1alpha1.PhasePending, planPrevBoot)},
		},
		"reported in an earlier boot and still Requested, journal lost: not journaled again": {
			maintenances: []v1alpha1.NodeMaintenance{planNM("uid-1", v1alpha1.SourceAPI, v1alpha1.PhaseRequested, planPrevBoot)},
		},
		"journaled in this boot: nothing": {
			maintenances: []v1alpha1.NodeMaintenance{planNM("uid-1", v1alpha1.SourceAPI, v1alpha1.PhaseRequested, planBoot)},
			entries:      []journal.Entry{planRequest("uid-1", v1alpha1.SourceAPI, planBoot, planAgo(time.Minute))},
		},
		"journaled in an earlier boot, still Pending: not again after the reboot": {
			maintenances: []v1alpha1.NodeMaintenance{planNM("uid-1", v1alpha1.SourceAPI, v1alpha1.PhasePending, planOldBoot)},
			entries:      []journal.Entry{planRequest("uid-1", v1alpha1.SourceAPI, planOldBoot, planAgo(time.Hour))},
		},
		"journaled in an earlier boot, never reported: not journaled again": {
			maintenances: []v1alpha1.NodeMaintenance{planNM("uid-1", v1alpha1.SourceAPI, v1alpha1.PhasePending, "")},
			entries:      []journal.Entry{planRequest("uid-1", v1alpha1.SourceAPI, planOldBoot, planAgo(time.Hour))},
		},
		"not named by the operator (deleted since it was read): not journaled": {
			maintenances: []v1alpha1.NodeMaintenance{planNM("uid-1", v1alpha1.SourceAPI, v1alpha1.PhasePending, "")},
			named:        []protocol.APIRequest{},
		},
		"named, and not known (its read failed): nothing": {
			named: []protocol.APIRequest{{Name: "nm-uid-1", UID: "uid-1"}},
		},
		"not yet accepted (no phase): not journaled": {
			maintenances: []v1alpha1.NodeMaintenance{planNM("uid-1", v1alpha1.SourceAPI, "", "")},
		},
		"failed before it was journaled: not journaled": {
			maintenances: []v1alpha1.NodeMaintenance{planNM("uid-1", v1alpha1.SourceAPI, v1alpha1.PhaseFailed, "")},
		},
		"host request: journaled on the node, never by the daemon, never reported": {
			maintenances: []v1alpha1.NodeMaintenance{planNM("h1", v1alpha1.SourceHost, v1alpha1.PhasePending, "")},
			entries:      []journal.Entry{planRequest("h1", v1alpha1.SourceHost, planBoot, planAgo(time.Minute))},
		},
		"config request: journaled by the config rule, not from the NodeMaintenance": {
			maintenances: []v1alpha1.NodeMaintenance{planNM("c1", v1alpha1.SourceConfig, v1alpha1.PhasePending, "")},
		},
		"several: each on its own": {
			maintenances: []v1alpha1.NodeMaintenance{
				planNM("uid-1", v1alpha1.SourceAPI, v1alpha1.PhasePending, ""),
				planNM("uid-2", v1alpha1.SourceSchedule, v1alpha1.PhasePending, ""),
				planNM("uid-3", v1alpha1.SourceAPI, v1alpha1.PhaseSucceeded, planOldBoot),
			},
			entries: []journal.Entry{
				planRequest("uid-3", v1alpha1.SourceAPI, planOldBoot, planAgo(2*time.Hour)),
				planRequest("uid-1", v1alpha1.SourceAPI, planBoot, planAgo(time.Minute)),
			},
			wantWrite:       []journal.Entry{{Kind: journal.KindRequest, ID: "uid-2", Source: v1alpha1.SourceSchedule, Reason: "why uid-2", Time: planNow}},
			wantReportFirst: []*report{{name: "nm-uid-2", bootID: planBoot, time: planNow}},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p := decide(planFacts(facts{entries: tt.entries, maintenances: tt.maintenances, apiRequests: tt.named}))
			g.Expect(planEntries(p)).To(Equal(tt.wantWrite))
			var first []*report
			for _, w := range p.write {
				first = append(first, w.reportFirst)
			}
			g.Expect(first).To(Equal(tt.wantReportFirst))
			g.Expect(p.reboot).To(BeNil())
		})
	}
}

func TestDecideRaisesThisBootsRequests(t *testing.T) {
	this := []journal.Entry{
		planRequest("h1", v1alpha1.SourceHost, planBoot, planAgo(2*time.Minute)),
		planConfigRequest("v2", planBoot, planAgo(time.Minute)),
	}
	thisRequested := protocol.Requested{BootID: planBoot, Requests: []protocol.Request{
		{ID: "h1", Source: v1alpha1.SourceHost, Reason: "reason h1", Time: planAgo(2 * time.Minute)},
		{ID: v1alpha1.ConfigRequestID(planBoot, "v2"), Source: v1alpha1.SourceConfig, Reason: "config change", Time: planAgo(time.Minute), Config: "v2"},
	}}
	stale := gen.Requested(planOldBoot, protocol.Request{ID: "old", Source: v1alpha1.SourceHost, Reason: "reason old", Time: planAgo(time.Hour)})
	tests := map[string]struct {
		entries []journal.Entry
		// node are the node's annotations, as options.
		node []gen.NodeOption
		// wantChange is whether reboot-requested is to be written.
		wantChange bool
		// wantRequested is this boot's outstanding requests, and the value
		// written when wantChange; nil means none, and removes the
		// annotation.
		wantRequested *protocol.Requested
	}{
		"this boot's requests are raised with the boot, in journal order": {
			entries:       this,
			wantChange:    true,
			wantRequested: &thisRequested,
		},
		"earlier boots' requests are not raised": {
			entries: append([]journal.Entry{
				planRequest("old", v1alpha1.SourceHost, planOldBoot, planAgo(time.Hour)),
				planConfigRequest("v1", planPrevBoot, planAgo(30*time.Minute)),
				planRebooting(planPrevBoot, planAgo(20*time.Minute), "old"),
			}, this...),
			node:          []gen.NodeOption{gen.Annotations(protocol.CurrentConfig, "v1")},
			wantChange:    true,
			wantRequested: &thisRequested,
		},
		"a request journaled again in this boot belongs to its first boot": {
			entries: []journal.Entry{
				planRequest("uid-1", v1alpha1.SourceAPI, planOldBoot, planAgo(time.Hour)),
				planRequest("uid-1", v1alpha1.SourceAPI, planBoot, planAgo(time.Minute)),
			},
			node:          []gen.NodeOption{stale},
			wantChange:    true,
			wantRequested: nil,
		},
		"no request in this boot: the stale annotation is removed": {
			entries:       []journal.Entry{planRequest("old", v1alpha1.SourceHost, planOldBoot, planAgo(time.Hour))},
			node:          []gen.NodeOption{stale},
			wantChange:    true,
			wantRequested: nil,
		},
		"no request and no annotation: no change": {
			entries: []journal.Entry{planRequest("old", v1alpha1.SourceHost, planOldBoot, planAgo(time.Hour))},
		},
		"the node already shows this boot's requests: no change": {
			entries:       this,
			node:          []gen.NodeOption{gen.Requested(thisRequested.BootID, thisRequested.Requests...)},
			wantRequested: &thisRequested,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			// The pool wants v2, which this boot's config request asks for.
			node := append([]gen.NodeOption{gen.Annotations(protocol.DesiredConfig, "v2")}, tt.node...)
			p := decide(planFacts(facts{entries: tt.entries}, node...))
			if tt.wantRequested != nil {
				g.Expect(p.outstanding).To(Equal(tt.wantRequested.Requests))
			} else {
				g.Expect(p.outstanding).To(BeEmpty())
			}
			if !tt.wantChange {
				g.Expect(p.annotations).NotTo(HaveKey(protocol.RebootRequested))
				return
			}
			g.Expect(p.annotations).To(HaveKey(protocol.RebootRequested))
			v := p.annotations[protocol.RebootRequested]
			if tt.wantRequested == nil {
				g.Expect(v).To(BeNil())
				return
			}
			g.Expect(v).NotTo(BeNil())
			var got protocol.Requested
			g.Expect(json.Unmarshal([]byte(*v), &got)).To(Succeed())
			g.Expect(got).To(Equal(*tt.wantRequested))
		})
	}
}

func TestDecideReboots(t *testing.T) {
	// Two requests of this boot, journaled out of id order; "a" has its
	// NodeMaintenance.
	requests := []journal.Entry{
		planRequest("b", v1alpha1.SourceHost, planBoot, planAgo(time.Hour)),
		planRequest("a", v1alpha1.SourceAPI, planBoot, planAgo(50*time.Minute)),
	}
	maintenances := []v1alpha1.NodeMaintenance{planNM("a", v1alpha1.SourceAPI, v1alpha1.PhaseRequested, planBoot)}
	askedAt := planAgo(5 * time.Minute)
	withRebooting := append(append([]journal.Entry(nil), requests...), planRebooting(planBoot, askedAt, "a", "b"))
	tests := map[string]struct {
		entries []journal.Entry
		// node are the node's annotations, as options.
		node []gen.NodeOption
		// now is the clock; zero means planNow.
		now time.Time
		// wantReboot is the rebooting entry to journal before rebooting;
		// nil means no reboot.
		wantReboot *journal.Entry
		// wantPhase is the daemon's state.
		wantPhase protocol.DaemonPhase
		// wantRecheckAt is when to look again; zero means never.
		wantRecheckAt time.Time
		// wantBecameDegraded is whether this sync finds the reboot missing.
		wantBecameDegraded bool
		// wantIgnored is the approval for another boot that is ignored.
		wantIgnored string
		// wantRefused is in why an approval of this boot is refused.
		wantRefused string
	}{
		"approved for this boot with requests: reboot for the sorted ids": {
			entries:       requests,
			node:          []gen.NodeOption{gen.Approved(planBoot)},
			wantReboot:    &journal.Entry{Kind: journal.KindRebooting, Requests: []string{"a", "b"}, Time: planNow},
			wantPhase:     protocol.DaemonRebooting,
			wantRecheckAt: planNow.Add(planTimeout),
		},
		"approved for this boot without requests: no reboot": {
			entries:   []journal.Entry{planRequest("old", v1alpha1.SourceHost, planOldBoot, planAgo(time.Hour))},
			node:      []gen.NodeOption{gen.Approved(planBoot)},
			wantPhase: protocol.DaemonIdle,
		},
		"approved for this boot without an admission: refused, no reboot": {
			entries:     requests,
			node:        []gen.NodeOption{gen.Annotations(protocol.RebootApproved, planBoot)},
			wantPhase:   protocol.DaemonRequested,
			wantRefused: "approval of boot " + planBoot + " refused: the node has no admission of this boot",
		},
		"approved for this boot, admitted for another: refused, no reboot": {
			entries:     requests,
			node:        []gen.NodeOption{gen.Admitted(planOldBoot, planAgo(time.Minute), "a"), gen.Approved(planBoot)},
			wantPhase:   protocol.DaemonRequested,
			wantRefused: "the node's admission is of boot " + planOldBoot,
		},
		"requests without an approval: wait": {
			entries:   requests,
			wantPhase: protocol.DaemonRequested,
		},
		"approval for another boot: ignored, no reboot": {
			entries:     requests,
			node:        []gen.NodeOption{gen.Approved(planOldBoot)},
			wantPhase:   protocol.DaemonRequested,
			wantIgnored: planOldBoot,
		},
		"stale approval after the reboot, nothing requested: ignored": {
			node:        []gen.NodeOption{gen.Approved(planPrevBoot)},
			wantPhase:   protocol.DaemonIdle,
			wantIgnored: planPrevBoot,
		},
		"a rebooting entry of an earlier boot does not stop this boot's reboot": {
			entries: append([]journal.Entry{
				planRequest("old", v1alpha1.SourceHost, planOldBoot, planAgo(2*time.Hour)),
				planRebooting(planOldBoot, planAgo(90*time.Minute), "old"),
			}, requests...),
			node:          []gen.NodeOption{gen.Approved(planBoot)},
			wantReboot:    &journal.Entry{Kind: journal.KindRebooting, Requests: []string{"a", "b"}, Time: planNow},
			wantPhase:     protocol.DaemonRebooting,
			wantRecheckAt: planNow.Add(planTimeout),
		},
		"already asked in this boot, before the timeout: never again, look at the deadline": {
			entries:       withRebooting,
			node:          []gen.NodeOption{gen.Approved(planBoot)},
			wantPhase:     protocol.DaemonRebooting,
			wantRecheckAt: askedAt.Add(planTimeout),
		},
		"already asked in this boot, just before the timeout: still rebooting": {
			entries:       withRebooting,
			node:          []gen.NodeOption{gen.Approved(planBoot)},
			now:           askedAt.Add(planTimeout - time.Nanosecond),
			wantPhase:     protocol.DaemonRebooting,
			wantRecheckAt: askedAt.Add(planTimeout),
		},
		"already asked in this boot, timeout reached: degraded, the first time": {
			entries:            withRebooting,
			node:               []gen.NodeOption{gen.Approved(planBoot)},
			now:                askedAt.Add(planTimeout),
			wantPhase:          protocol.DaemonDegraded,
			wantBecameDegraded: true,
		},
		"degraded already on the node for this boot: not newly degraded": {
			entries: withRebooting,
			node: []gen.NodeOption{
				gen.Approved(planBoot),
				gen.DaemonState(protocol.DaemonDegraded, planBoot, "asked to reboot", askedAt.Add(planTimeout)),
			},
			now:       askedAt.Add(2 * planTimeout),
			wantPhase: protocol.DaemonDegraded,
		},
		"degraded on the node for an earlier boot: newly degraded in this one": {
			entries: withRebooting,
			node: []gen.NodeOption{
				gen.Approved(planBoot),
				gen.DaemonState(protocol.DaemonDegraded, planOldBoot, "asked to reboot", planAgo(time.Hour)),
			},
			now:                askedAt.Add(2 * planTimeout),
			wantPhase:          protocol.DaemonDegraded,
			wantBecameDegraded: true,
		},
		"rebooting in this boot without an approval on the node still never asks again": {
			entries:            withRebooting,
			now:                askedAt.Add(planTimeout),
			wantPhase:          protocol.DaemonDegraded,
			wantBecameDegraded: true,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p := decide(planFacts(facts{entries: tt.entries, now: tt.now, maintenances: maintenances}, tt.node...))
			g.Expect(p.reboot).To(Equal(tt.wantReboot))
			g.Expect(p.state.Phase).To(Equal(tt.wantPhase))
			g.Expect(p.state.BootID).To(Equal(planBoot))
			g.Expect(p.recheckAt).To(Equal(tt.wantRecheckAt))
			g.Expect(p.becameDegraded).To(Equal(tt.wantBecameDegraded))
			g.Expect(p.ignoredApproval).To(Equal(tt.wantIgnored))
			if tt.wantRefused == "" {
				g.Expect(p.refusedApproval).To(BeEmpty())
			} else {
				g.Expect(p.refusedApproval).To(ContainSubstring(tt.wantRefused))
				g.Expect(p.state.Message).To(ContainSubstring(tt.wantRefused), "the node's state says so")
			}
		})
	}
}

func TestDecideRequestsAndReportsConfig(t *testing.T) {
	tests := map[string]struct {
		entries []journal.Entry
		// node are the node's annotations, as options.
		node []gen.NodeOption
		// wantWrite are the request entries journaled.
		wantWrite []journal.Entry
		// wantCurrent is the current-config written; nil means no change.
		wantCurrent *string
	}{
		"the pool wants another config: one config request": {
			node: []gen.NodeOption{gen.Annotations(protocol.DesiredConfig, "v2", protocol.CurrentConfig, "v1")},
			wantWrite: []journal.Entry{{Kind: journal.KindRequest, ID: v1alpha1.ConfigRequestID(planBoot, "v2"), Source: v1alpha1.SourceConfig,
				Reason: "config v1, pool wants v2", Config: "v2", Time: planNow}},
		},
		"no current config yet: requested from an unknown one": {
			node: []gen.NodeOption{gen.Annotations(protocol.DesiredConfig, "v2")},
			wantWrite: []journal.Entry{{Kind: journal.KindRequest, ID: v1alpha1.ConfigRequestID(planBoot, "v2"), Source: v1alpha1.SourceConfig,
				Reason: "config unknown, pool wants v2", Config: "v2", Time: planNow}},
		},
		"already requested in this boot: not again": {
			entries: []journal.Entry{planConfigRequest("v2", planBoot, planAgo(time.Minute))},
			node:    []gen.NodeOption{gen.Annotations(protocol.DesiredConfig, "v2", protocol.CurrentConfig, "v1")},
		},
		"after the reboot: the config is current and nothing is requested": {
			entries:     []journal.Entry{planConfigRequest("v2", planOldBoot, planAgo(time.Hour))},
			node:        []gen.NodeOption{gen.Annotations(protocol.DesiredConfig, "v2", protocol.CurrentConfig, "v1")},
			wantCurrent: planPtr("v2"),
		},
		"after the reboot with no current config yet: the config is current": {
			entries:     []journal.Entry{planConfigRequest("v2", planOldBoot, planAgo(time.Hour))},
			node:        []gen.NodeOption{gen.Annotations(protocol.DesiredConfig, "v2")},
			wantCurrent: planPtr("v2"),
		},
		"after the reboot the current config is already reported: no change": {
			entries: []journal.Entry{planConfigRequest("v2", planOldBoot, planAgo(time.Hour))},
			node:    []gen.NodeOption{gen.Annotations(protocol.DesiredConfig, "v2", protocol.CurrentConfig, "v2")},
		},
		"the last config requested in an earlier boot is current": {
			entries: []journal.Entry{
				planConfigRequest("v2", planOldBoot, planAgo(2*time.Hour)),
				planConfigRequest("v3", planPrevBoot, planAgo(time.Hour)),
			},
			node:        []gen.NodeOption{gen.Annotations(protocol.DesiredConfig, "v3", protocol.CurrentConfig, "v2")},
			wantCurrent: planPtr("v3"),
		},
		"after the reboot the pool moved on: current is reported and the next is requested": {
			entries:     []journal.Entry{planConfigRequest("v2", planOldBoot, planAgo(time.Hour))},
			node:        []gen.NodeOption{gen.Annotations(protocol.DesiredConfig, "v3", protocol.CurrentConfig, "v1")},
			wantCurrent: planPtr("v2"),
			wantWrite: []journal.Entry{{Kind: journal.KindRequest, ID: v1alpha1.ConfigRequestID(planBoot, "v3"), Source: v1alpha1.SourceConfig,
				Reason: "config v2, pool wants v3", Config: "v3", Time: planNow}},
		},
		"the pool wants nothing: nothing requested": {
			node: []gen.NodeOption{gen.Annotations(protocol.CurrentConfig, "v1")},
		},
		"the pool wants what runs: nothing requested": {
			node: []gen.NodeOption{gen.Annotations(protocol.DesiredConfig, "v1", protocol.CurrentConfig, "v1")},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p := decide(planFacts(facts{entries: tt.entries}, tt.node...))
			g.Expect(planEntries(p)).To(Equal(tt.wantWrite))
			if tt.wantCurrent == nil {
				g.Expect(p.annotations).NotTo(HaveKey(protocol.CurrentConfig))
			} else {
				g.Expect(p.annotations).To(HaveKeyWithValue(protocol.CurrentConfig, tt.wantCurrent))
			}
		})
	}
}

// A config request whose reason the journal rejects would be journaled on
// every sync and never read back, so the node would never roll.
func TestDecideConfigRequestFitsTheJournal(t *testing.T) {
	tests := map[string]struct {
		current, desired string
		// wantInReason is a substring of the reason.
		wantInReason string
	}{
		"two configs of the pool's longest (253 bytes)": {
			current: strings.Repeat("c", 253), desired: strings.Repeat("d", 253), wantInReason: strings.Repeat("d", 253),
		},
		"a hand-written desired config longer than a reason": {
			current: "v1", desired: strings.Repeat("d", 600), wantInReason: "pool wants config ddd",
		},
		"a hand-written multi-byte desired config longer than a reason": {
			current: "v1", desired: strings.Repeat("é", 300), wantInReason: "pool wants config éé",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p := decide(planFacts(facts{}, gen.Annotations(protocol.DesiredConfig, tt.desired, protocol.CurrentConfig, tt.current)))
			g.Expect(p.write).To(HaveLen(1))
			g.Expect(p.write[0].entry.Config).To(Equal(tt.desired))
			g.Expect(p.write[0].entry.ID).To(Equal(v1alpha1.ConfigRequestID(planBoot, tt.desired)))
			g.Expect(len(p.write[0].entry.Reason)).To(BeNumerically("<=", v1alpha1.MaxReasonLength))
			g.Expect(utf8.ValidString(p.write[0].entry.Reason)).To(BeTrue())
			g.Expect(p.write[0].entry.Reason).To(ContainSubstring(tt.wantInReason))
		})
	}
}

func TestDecideConfigRequestIDIsPerBootAndConfig(t *testing.T) {
	g := NewWithT(t)
	id := v1alpha1.ConfigRequestID(planBoot, "v2")
	g.Expect(id).To(HavePrefix("config-"))
	g.Expect(v1alpha1.ConfigRequestID(planBoot, "v2")).To(Equal(id), "the same boot and config give the same id, restarts or not")
	g.Expect(v1alpha1.ConfigRequestID(planOldBoot, "v2")).NotTo(Equal(id))
	g.Expect(v1alpha1.ConfigRequestID(planBoot, "v3")).NotTo(Equal(id))
}

func TestDecideStateAnnotation(t *testing.T) {
	since := planAgo(time.Hour)
	one := []journal.Entry{planRequest("h1", v1alpha1.SourceHost, planBoot, planAgo(time.Hour))}
	two := append(append([]journal.Entry(nil), one...), planRequest("h2", v1alpha1.SourceHost, planBoot, planAgo(time.Minute)))
	tests := map[string]struct {
		entries []journal.Entry
		// state is the node's state annotation; nil means none.
		state gen.NodeOption
		// wantPhase is the daemon's state.
		wantPhase protocol.DaemonPhase
		// wantSince is when the daemon entered the phase.
		wantSince time.Time
		// wantChange is whether the state annotation is to be written.
		wantChange bool
	}{
		"no state yet: written, since now": {
			wantPhase:  protocol.DaemonIdle,
			wantSince:  planNow,
			wantChange: true,
		},
		"same phase, boot and message: since kept, nothing written": {
			entries:   one,
			state:     gen.DaemonState(protocol.DaemonRequested, planBoot, "1 requests waiting for approval", since),
			wantPhase: protocol.DaemonRequested,
			wantSince: since,
		},
		"same phase and boot, another message: since kept, written": {
			entries:    two,
			state:      gen.DaemonState(protocol.DaemonRequested, planBoot, "1 requests waiting for approval", since),
			wantPhase:  protocol.DaemonRequested,
			wantSince:  since,
			wantChange: true,
		},
		"another phase: since now": {
			entries:    one,
			state:      gen.DaemonState(protocol.DaemonIdle, planBoot, "", since),
			wantPhase:  protocol.DaemonRequested,
			wantSince:  planNow,
			wantChange: true,
		},
		"same phase in an earlier boot: since now": {
			state:      gen.DaemonState(protocol.DaemonIdle, planOldBoot, "", since),
			wantPhase:  protocol.DaemonIdle,
			wantSince:  planNow,
			wantChange: true,
		},
		"malformed state: rewritten": {
			state:      gen.Annotations(protocol.State, "{not json"),
			wantPhase:  protocol.DaemonIdle,
			wantSince:  planNow,
			wantChange: true,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var node []gen.NodeOption
			if tt.state != nil {
				node = append(node, tt.state)
			}
			p := decide(planFacts(facts{entries: tt.entries}, node...))
			g.Expect(p.state.Phase).To(Equal(tt.wantPhase))
			g.Expect(p.state.BootID).To(Equal(planBoot))
			g.Expect(p.state.Since).To(Equal(tt.wantSince))
			if !tt.wantChange {
				g.Expect(p.annotations).NotTo(HaveKey(protocol.State))
				return
			}
			g.Expect(p.annotations).To(HaveKey(protocol.State))
			v := p.annotations[protocol.State]
			g.Expect(v).NotTo(BeNil())
			var got protocol.DaemonState
			g.Expect(json.Unmarshal([]byte(*v), &got)).To(Succeed())
			g.Expect(got).To(Equal(p.state))
		})
	}
}

// planEntries are the entries a plan journals.
func planEntries(p plan) []journal.Entry {
	var out []journal.Entry
	for _, w := range p.write {
		out = append(out, w.entry)
	}
	return out
}

// planPtr returns a pointer to s, for want fields that tell "no change" (nil)
// from a value.
func planPtr(s string) *string { return &s }

// A config request for a config the pool no longer wants is withdrawn (a
// roll back, or the pool moved on), unless its reboot was approved: then
// it stays, and the reboot comes.
func TestDecideWithdrawsConfigRequestsThePoolNoLongerWants(t *testing.T) {
	v2 := planConfigRequest("v2", planBoot, planAgo(time.Minute))
	for name, tt := range map[string]struct {
		node          []gen.NodeOption
		wantWithdrawn bool
	}{
		"rolled back to what runs": {
			node:          []gen.NodeOption{gen.Annotations(protocol.DesiredConfig, "v1", protocol.CurrentConfig, "v1")},
			wantWithdrawn: true,
		},
		"moved on to another config": {
			node:          []gen.NodeOption{gen.Annotations(protocol.DesiredConfig, "v3", protocol.CurrentConfig, "v1")},
			wantWithdrawn: true,
		},
		"still wanted": {
			node: []gen.NodeOption{gen.Annotations(protocol.DesiredConfig, "v2", protocol.CurrentConfig, "v1")},
		},
		"the pool wants no config any longer (the node left it)": {
			node:          []gen.NodeOption{gen.Annotations(protocol.CurrentConfig, "v1")},
			wantWithdrawn: true,
		},
		"approved already: the reboot comes": {
			node: []gen.NodeOption{gen.Annotations(protocol.DesiredConfig, "v1", protocol.CurrentConfig, "v1"),
				gen.Requested(planBoot, protocol.Request{ID: v2.ID, Source: v1alpha1.SourceConfig, Reason: v2.Reason, Time: v2.Time, Config: "v2"}),
				gen.Admitted(planBoot, planAgo(time.Minute), v2.ID), gen.Approved(planBoot)},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p := decide(planFacts(facts{entries: []journal.Entry{v2}}, tt.node...))
			ids := []string{}
			for _, r := range p.outstanding {
				ids = append(ids, r.ID)
			}
			if tt.wantWithdrawn {
				g.Expect(ids).NotTo(ContainElement(v2.ID))
				v := p.annotations[protocol.RebootRequested]
				g.Expect(v).NotTo(BeNil())
				var got protocol.Requested
				g.Expect(json.Unmarshal([]byte(*v), &got)).To(Succeed())
				g.Expect(got.Cancelled).To(ContainElement(v2.ID), "shown withdrawn, so that its NodeMaintenance ends")
				return
			}
			g.Expect(ids).To(ContainElement(v2.ID))
		})
	}
}
