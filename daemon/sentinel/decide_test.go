package sentinel

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/api/protocol"
)

func TestDecide(t *testing.T) {
	needed := func(fp string) *Observation {
		return &Observation{Needed: true, Fingerprint: fp, Reason: "packages linux-image"}
	}
	tests := map[string]struct {
		in Input
		// want is the state decided; wantRequest whether a new request is
		// journaled.
		want        protocol.SentinelState
		wantRequest bool
	}{
		"not looked at yet": {in: Input{BootID: "b2"}, want: ""},
		"unreadable asks for nothing, even unchanged since a request": {
			in:   Input{BootID: "b2", Observation: &Observation{Problem: "permission denied"}, Previous: &Request{ID: "s1", BootID: "b1", Fingerprint: "A"}},
			want: protocol.SentinelError,
		},
		"clear":                                 {in: Input{BootID: "b1", Observation: &Observation{}}, want: protocol.SentinelClear},
		"a new sentinel asks":                   {in: Input{BootID: "b1", Observation: needed("A")}, want: protocol.SentinelRequested, wantRequest: true},
		"asked in this boot: no second request": {in: Input{BootID: "b1", Observation: needed("A"), ThisBoot: []Request{{ID: "s1", BootID: "b1", Fingerprint: "A"}}}, want: protocol.SentinelRequested},
		"changed within the boot while a request stands: the one reboot covers it": {
			in:   Input{BootID: "b1", Observation: needed("B"), ThisBoot: []Request{{ID: "s1", BootID: "b1", Fingerprint: "A"}}},
			want: protocol.SentinelRequested,
		},
		"cancelled by root, unchanged: not asked again": {
			in:   Input{BootID: "b1", Observation: needed("A"), ThisBoot: []Request{{ID: "s1", BootID: "b1", Fingerprint: "A", Cancelled: true}}},
			want: protocol.SentinelCancelled,
		},
		"cancelled by root, then new packages: asked again": {
			in:          Input{BootID: "b1", Observation: needed("B"), ThisBoot: []Request{{ID: "s1", BootID: "b1", Fingerprint: "A", Cancelled: true}}},
			want:        protocol.SentinelRequested,
			wantRequest: true,
		},
		"unchanged after the reboot it asked for: a reboot loop, held": {
			in:   Input{BootID: "b2", Observation: needed("A"), Previous: &Request{ID: "s1", BootID: "b1", Fingerprint: "A"}},
			want: protocol.SentinelRebootLoop,
		},
		"unchanged since the last look of the boot that asked, though changed since it asked: a reboot loop": {
			in:   Input{BootID: "b2", Observation: needed("A2"), Previous: &Request{ID: "s1", BootID: "b1", Fingerprint: "A", Latest: "A2"}},
			want: protocol.SentinelRebootLoop,
		},
		"changed after the reboot (new packages): asked again": {
			in:          Input{BootID: "b2", Observation: needed("B"), Previous: &Request{ID: "s1", BootID: "b1", Fingerprint: "A"}},
			want:        protocol.SentinelRequested,
			wantRequest: true,
		},
		"gone after the reboot: clear": {
			in:   Input{BootID: "b2", Observation: &Observation{}, Previous: &Request{ID: "s1", BootID: "b1", Fingerprint: "A"}},
			want: protocol.SentinelClear,
		},
		"a previous request naming this boot is this boot's, not a loop": {
			in:          Input{BootID: "b1", Observation: needed("A"), Previous: &Request{ID: "s1", BootID: "b1", Fingerprint: "A"}},
			want:        protocol.SentinelRequested,
			wantRequest: true,
		},
		"changed, then asked in this boot: no loop, no second request": {
			in: Input{BootID: "b2", Observation: needed("B"), Previous: &Request{ID: "s1", BootID: "b1", Fingerprint: "A"},
				ThisBoot: []Request{{ID: "s2", BootID: "b2", Fingerprint: "B"}}},
			want: protocol.SentinelRequested,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			d := Decide(tt.in)
			g.Expect(d.State).To(Equal(tt.want))
			g.Expect(d.Request).To(Equal(tt.wantRequest))
			if tt.want != "" {
				g.Expect(d.Message).NotTo(BeEmpty())
			}
		})
	}
}
