package daemon

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/test/gen"
)

// planCancel is a cancellation entry as the journal hands it back.
func planCancel(id, boot string, at time.Time) journal.Entry {
	return journal.Entry{Kind: journal.KindCancel, ID: id, Reason: "cancelled on the node", Time: at, BootID: boot}
}

func TestDecideCancellations(t *testing.T) {
	h1 := planRequest("h1", v1alpha1.SourceHost, planBoot, planAgo(time.Hour))
	h2 := planRequest("h2", v1alpha1.SourceHost, planBoot, planAgo(50*time.Minute))
	api := planRequest("uid-1", v1alpha1.SourceAPI, planBoot, planAgo(40*time.Minute))
	named := []protocol.APIRequest{{Name: "nm-uid-1", UID: "uid-1"}}
	cancelH1 := planCancel("h1", planBoot, planAgo(time.Minute))
	shown := gen.RequestedIDs(planBoot, v1alpha1.SourceHost, planAgo(time.Hour), "h1", "h2")

	tests := map[string]struct {
		entries []journal.Entry
		// named are the NodeMaintenances the operator names on the node;
		// unknown says it names none, or they cannot be read.
		named   []protocol.APIRequest
		unknown bool
		node    []gen.NodeOption
		// wantOutstanding are the ids still raised.
		wantOutstanding []string
		// wantCancelled are the ids the node shows cancelled.
		wantCancelled []string
		// wantRefused are the ids whose cancellation is refused.
		wantRefused []string
		// wantWrite are the entries journaled.
		wantWrite []journal.Entry
		// wantLock is whether the annotation patch is conditional.
		wantLock bool
		// wantReboot is whether the node reboots now.
		wantReboot bool
	}{
		"cancelled before admission: withdrawn, shown cancelled, patched under lock": {
			entries:         []journal.Entry{h1, h2, cancelH1},
			node:            []gen.NodeOption{shown},
			wantOutstanding: []string{"h2"},
			wantCancelled:   []string{"h1"},
			wantLock:        true,
		},
		"cancelled before the daemon raised it: withdrawn without lock": {
			entries:       []journal.Entry{h1, cancelH1},
			wantCancelled: []string{"h1"},
		},
		"cancelled while draining (admitted, not approved): withdrawn": {
			entries:         []journal.Entry{h1, h2, cancelH1},
			node:            []gen.NodeOption{shown, gen.Admitted(planBoot, planAgo(2*time.Minute), "h1", "h2")},
			wantOutstanding: []string{"h2"},
			wantCancelled:   []string{"h1"},
			wantLock:        true,
		},
		"cancelled after the approval covered it: refused, and the node reboots for it": {
			entries:         []journal.Entry{h1, h2, cancelH1},
			node:            []gen.NodeOption{shown, gen.Approved(planBoot)},
			wantOutstanding: []string{"h1", "h2"},
			wantRefused:     []string{"h1"},
			wantReboot:      true,
		},
		"withdrawn already, then an approval for the rest: stays withdrawn": {
			entries:         []journal.Entry{h1, h2, cancelH1},
			node:            []gen.NodeOption{gen.Requested(planBoot, protocol.Request{ID: "h2", Source: v1alpha1.SourceHost}), gen.Approved(planBoot)},
			wantOutstanding: []string{"h2"},
			wantCancelled:   []string{"h1"},
			wantReboot:      true,
		},
		"cancelled after the daemon asked for the reboot: refused": {
			entries:         []journal.Entry{h1, planRebooting(planBoot, planAgo(2*time.Minute), "h1"), cancelH1},
			wantOutstanding: []string{"h1"},
			wantRefused:     []string{"h1"},
		},
		"a cancellation journaled before its request does not count": {
			entries:         []journal.Entry{cancelH1, h1},
			wantOutstanding: []string{"h1"},
		},
		"a cancellation of an earlier boot's request changes nothing in this one": {
			entries:         []journal.Entry{planRequest("old", v1alpha1.SourceHost, planOldBoot, planAgo(2*time.Hour)), planCancel("old", planBoot, planAgo(time.Minute)), h1},
			wantOutstanding: []string{"h1"},
		},
		"a cancellation of an unknown id changes nothing": {
			entries:         []journal.Entry{h1, planCancel("nope", planBoot, planAgo(time.Minute))},
			wantOutstanding: []string{"h1"},
		},
		"cancelled twice: once": {
			entries:       []journal.Entry{h1, cancelH1, planCancel("h1", planBoot, planAgo(time.Second))},
			wantCancelled: []string{"h1"},
		},
		"an api request whose NodeMaintenance the operator names stays": {
			entries:         []journal.Entry{api},
			named:           named,
			wantOutstanding: []string{"uid-1"},
		},
		"an api request the operator no longer names (deleted, or being deleted): a cancellation is journaled and counts at once": {
			entries:       []journal.Entry{api},
			wantWrite:     []journal.Entry{{Kind: journal.KindCancel, ID: "uid-1", Reason: "its NodeMaintenance was deleted", Time: planNow, BootID: planBoot}},
			wantCancelled: []string{"uid-1"},
		},
		"an api request on a node that names no NodeMaintenances, or names them unreadably: not cancelled": {
			entries:         []journal.Entry{api},
			unknown:         true,
			wantOutstanding: []string{"uid-1"},
		},
		"an api request deleted and cancelled already: not journaled again": {
			entries:       []journal.Entry{api, planCancel("uid-1", planBoot, planAgo(time.Minute))},
			wantCancelled: []string{"uid-1"},
		},
		"an api request deleted after the daemon asked for its reboot: nothing to cancel": {
			entries:         []journal.Entry{api, planRebooting(planBoot, planAgo(time.Minute), "uid-1")},
			wantOutstanding: []string{"uid-1"},
		},
		"an api request deleted after its approval: the cancellation is journaled and refused": {
			entries:         []journal.Entry{api},
			node:            []gen.NodeOption{gen.RequestedIDs(planBoot, v1alpha1.SourceAPI, planAgo(time.Hour), "uid-1"), gen.Approved(planBoot)},
			wantWrite:       []journal.Entry{{Kind: journal.KindCancel, ID: "uid-1", Reason: "its NodeMaintenance was deleted", Time: planNow, BootID: planBoot}},
			wantOutstanding: []string{"uid-1"},
			wantRefused:     []string{"uid-1"},
			wantReboot:      true,
		},
		"an api request of an earlier boot whose NodeMaintenance was deleted: nothing": {
			entries: []journal.Entry{planRequest("uid-9", v1alpha1.SourceAPI, planOldBoot, planAgo(2*time.Hour))},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			f := planFacts(facts{entries: tt.entries, apiRequests: tt.named}, tt.node...)
			f.apiRequestsKnown = !tt.unknown
			p := decide(f)
			var outstanding []string
			for _, r := range p.outstanding {
				outstanding = append(outstanding, r.ID)
			}
			g.Expect(outstanding).To(Equal(tt.wantOutstanding))
			var refused []string
			for _, c := range p.cancellations {
				if c.refused {
					refused = append(refused, c.id)
					g.Expect(c.message).To(ContainSubstring("refused"))
				}
			}
			g.Expect(refused).To(Equal(tt.wantRefused))
			g.Expect(planEntries(p)).To(Equal(tt.wantWrite))
			g.Expect(p.lock).To(Equal(tt.wantLock))
			g.Expect(p.reboot != nil).To(Equal(tt.wantReboot))

			var got protocol.Requested
			if v, ok := p.annotations[protocol.RebootRequested]; ok && v != nil {
				g.Expect(json.Unmarshal([]byte(*v), &got)).To(Succeed())
			} else {
				n := planFacts(facts{}, tt.node...).node
				_, _ = protocol.Decode(n, protocol.RebootRequested, &got)
			}
			g.Expect(got.Cancelled).To(Equal(tt.wantCancelled))
		})
	}
}

func TestDecideCancelledConfigRequestIsNotAppliedOrRequestedAgain(t *testing.T) {
	g := NewWithT(t)
	req := planConfigRequest("v2", planBoot, planAgo(time.Hour))
	p := decide(planFacts(facts{entries: []journal.Entry{req, planCancel(req.ID, planBoot, planAgo(time.Minute))}},
		gen.Annotations(protocol.DesiredConfig, "v2", protocol.CurrentConfig, "v1")))
	g.Expect(p.outstanding).To(BeEmpty())
	g.Expect(p.write).To(BeEmpty(), "not requested again in this boot")
	g.Expect(p.state.Config).To(BeEmpty(), "the next reboot applies no config")

	// After a reboot, the journal of the boot before says it was withdrawn:
	// v1 still runs, and v2 is requested again.
	p = decide(planFacts(facts{entries: []journal.Entry{
		planConfigRequest("v2", planPrevBoot, planAgo(time.Hour)),
		planCancel(v1alpha1.ConfigRequestID(planPrevBoot, "v2"), planPrevBoot, planAgo(time.Minute)),
	}}, gen.Annotations(protocol.DesiredConfig, "v2", protocol.CurrentConfig, "v1")))
	g.Expect(p.annotations).NotTo(HaveKey(protocol.CurrentConfig))
	g.Expect(planEntries(p)).To(ConsistOf(HaveField("ID", v1alpha1.ConfigRequestID(planBoot, "v2"))))
}
