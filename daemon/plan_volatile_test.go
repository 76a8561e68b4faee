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

// planState writes the daemon's state annotation with a config.
func planState(phase protocol.DaemonPhase, boot, config string) gen.NodeOption {
	return gen.Annotations(protocol.State, protocol.Encode(protocol.DaemonState{Phase: phase, BootID: boot, Since: planAgo(time.Hour), Config: config}))
}

// On a node whose journal forgets earlier boots, the daemon's state on the
// Node says which config the last reboot applied.
func TestDecideConfigAppliedSurvivesAVolatileJournal(t *testing.T) {
	desired := gen.Annotations(protocol.DesiredConfig, "v2", protocol.CurrentConfig, "v1")
	tests := map[string]struct {
		entries []journal.Entry
		node    []gen.NodeOption
		// wantCurrent is the current-config written; nil means no change.
		wantCurrent *string
		// wantRequest is whether a config request is journaled.
		wantRequest bool
	}{
		"no journal of the boot before, its state says it applied v2: v2 runs, nothing requested": {
			node:        []gen.NodeOption{desired, planState(protocol.DaemonRebooting, planPrevBoot, "v2")},
			wantCurrent: planPtr("v2"),
		},
		"the state applied v2 while requested, not yet rebooting (any reboot applies it)": {
			node:        []gen.NodeOption{desired, planState(protocol.DaemonRequested, planPrevBoot, "v2")},
			wantCurrent: planPtr("v2"),
		},
		"the state of this boot says v2 is to be applied: not applied yet": {
			entries: []journal.Entry{planConfigRequest("v2", planBoot, planAgo(time.Minute))},
			node:    []gen.NodeOption{desired, planState(protocol.DaemonRequested, planBoot, "v2")},
		},
		"the state of the boot before names no config, nor does the journal: v2 is requested (the loop this fixes needs no state)": {
			node:        []gen.NodeOption{desired, planState(protocol.DaemonIdle, planPrevBoot, "")},
			wantRequest: true,
		},
		"a state written before kmaint kept the config: the journal says": {
			entries:     []journal.Entry{planConfigRequest("v2", planPrevBoot, planAgo(time.Hour))},
			node:        []gen.NodeOption{desired, planState(protocol.DaemonRebooting, planPrevBoot, "")},
			wantCurrent: planPtr("v2"),
		},
		"the state wins over an older journal": {
			entries:     []journal.Entry{planConfigRequest("v3", planOldBoot, planAgo(2*time.Hour))},
			node:        []gen.NodeOption{desired, planState(protocol.DaemonRebooting, planPrevBoot, "v2")},
			wantCurrent: planPtr("v2"),
		},
		"an unreadable state: the journal says": {
			entries:     []journal.Entry{planConfigRequest("v2", planPrevBoot, planAgo(time.Hour))},
			node:        []gen.NodeOption{desired, gen.Annotations(protocol.State, "{not json")},
			wantCurrent: planPtr("v2"),
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p := decide(planFacts(facts{entries: tt.entries}, tt.node...))
			if tt.wantCurrent == nil {
				g.Expect(p.annotations).NotTo(HaveKey(protocol.CurrentConfig))
			} else {
				g.Expect(p.annotations).To(HaveKeyWithValue(protocol.CurrentConfig, tt.wantCurrent))
			}
			g.Expect(len(p.write) > 0).To(Equal(tt.wantRequest))
		})
	}
}

// The state names the config the next reboot applies, written before the
// daemon asks for the reboot.
func TestDecideStateNamesTheConfigTheRebootApplies(t *testing.T) {
	g := NewWithT(t)
	entries := []journal.Entry{
		planConfigRequest("v2", planBoot, planAgo(time.Hour)),
		planRequest("h1", v1alpha1.SourceHost, planBoot, planAgo(50*time.Minute)),
		planConfigRequest("v3", planBoot, planAgo(40*time.Minute)),
	}
	p := decide(planFacts(facts{entries: entries, volatileJournal: true},
		gen.Annotations(protocol.DesiredConfig, "v3", protocol.CurrentConfig, "v1"), gen.Approved(planBoot)))
	g.Expect(p.reboot).NotTo(BeNil())
	g.Expect(p.state.Config).To(Equal("v3"), "the last config requested")
	g.Expect(p.state.VolatileJournal).To(BeTrue())
	v := p.annotations[protocol.State]
	g.Expect(v).NotTo(BeNil(), "written in the same sync that reboots, before the reboot")
	var st protocol.DaemonState
	g.Expect(json.Unmarshal([]byte(*v), &st)).To(Succeed())
	g.Expect(st.Config).To(Equal("v3"))
	g.Expect(st.Phase).To(Equal(protocol.DaemonRebooting))

	// Nothing configured: no config in the state.
	p = decide(planFacts(facts{entries: entries[1:2]}))
	g.Expect(p.state.Config).To(BeEmpty())
}

func TestVolatileJournal(t *testing.T) {
	tests := map[string]struct {
		boots []string
		node  []gen.NodeOption
		// want is whether the journal is called volatile.
		want bool
		// wantPrevious is the earlier boot named, when one is to be told.
		wantPrevious string
	}{
		"only this boot, the node ran another before: volatile": {
			boots:        []string{planBoot},
			node:         []gen.NodeOption{gen.DaemonState(protocol.DaemonIdle, planPrevBoot, "", planAgo(time.Hour))},
			want:         true,
			wantPrevious: planPrevBoot,
		},
		"an empty journal, the node ran another boot before: volatile": {
			node:         []gen.NodeOption{gen.DaemonState(protocol.DaemonIdle, planPrevBoot, "", planAgo(time.Hour))},
			want:         true,
			wantPrevious: planPrevBoot,
		},
		"earlier boots kept: persistent": {
			boots: []string{planOldBoot, planPrevBoot, planBoot},
			node:  []gen.NodeOption{gen.DaemonState(protocol.DaemonIdle, planPrevBoot, "", planAgo(time.Hour))},
		},
		"only this boot and no earlier state: a new node, not called volatile": {
			boots: []string{planBoot},
		},
		"only this boot, and the state is of this boot (daemon restarted): not known from this": {
			boots: []string{planBoot},
			node:  []gen.NodeOption{gen.DaemonState(protocol.DaemonIdle, planBoot, "", planAgo(time.Hour))},
		},
		"daemon restarted in a boot its state calls volatile: still volatile, no previous boot to tell again": {
			boots: []string{planBoot},
			node: []gen.NodeOption{gen.Annotations(protocol.State, protocol.Encode(protocol.DaemonState{
				Phase: protocol.DaemonIdle, BootID: planBoot, Since: planAgo(time.Hour), VolatileJournal: true}))},
			want: true,
		},
		"an unreadable state: not known": {
			boots: []string{planBoot},
			node:  []gen.NodeOption{gen.Annotations(protocol.State, "{not json")},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, previous := volatileJournal(tt.boots, planBoot, planFacts(facts{}, tt.node...).node)
			g.Expect(got).To(Equal(tt.want))
			g.Expect(previous).To(Equal(tt.wantPrevious))
		})
	}
}
