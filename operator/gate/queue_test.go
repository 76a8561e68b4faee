package gate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
)

// What a pool's members keep, node by node, is what reading and sorting
// every node would find, whatever changed in between: nodes written (a new
// view, maybe asked later), gone, new, admitted, or no longer ordinary.
func TestMembersKeepWhatReadingEveryNodeWouldFind(t *testing.T) {
	base := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	rnd := rand.New(rand.NewPCG(7, 44))
	view := func(name string, at time.Time, kind int) *keptView {
		st := protocol.NodeState{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, BootID: "b", Ready: true,
			Requested: &protocol.Requested{BootID: "b", Requests: []protocol.Request{{ID: "r-" + name, Source: "host", Time: at}}}}
		switch kind {
		case 1: // admitted
			st.Admission = &protocol.Admission{BootID: "b"}
		case 2: // asks nothing
			st.Requested = nil
		case 3: // cordoned by a person
			st.Unschedulable = true
		case 4: // runs another config
			st.CurrentConfig = "old"
		case 5: // rebooting
			st.Admission, st.Approved, st.Unschedulable, st.Cordoned = &protocol.Admission{BootID: "b"}, "b", true, true
		case 6: // back from its reboot
			st.Admission, st.Approved, st.BootID = &protocol.Admission{BootID: "b"}, "b", "c"
		}
		k := &keptView{view: nodeView{NodeState: st, windowOpen: true, queuedAt: at}}
		ordinary := k.view.ordinary("", true)
		k.quiet = ordinary || k.view.quietlyRebooting("", true)
		k.current = st.CurrentConfig == ""
		k.view.queued = ordinary && k.view.WantsAdmission()
		return k
	}
	names := func(ks []*keptView) []string {
		var out []string
		for _, k := range ks {
			out = append(out, k.view.Node.Name)
		}
		return out
	}
	m := newMembers()
	all := map[string]*keptView{}
	put := func(k *keptView) {
		all[k.view.Node.Name] = k
		m.set(k.view.Node.Name, k)
	}
	for i := range 300 {
		// Many ask in the same second: the names order them.
		put(view(fmt.Sprintf("n-%03d", i), base.Add(time.Duration(rnd.IntN(50))*time.Second), rnd.IntN(8)))
	}
	for round := range 60 {
		var queue, active, rebooting []*keptView
		var want tally
		for _, k := range all {
			switch {
			case !k.quiet:
				active = append(active, k)
			default:
				want.nodes++
				if k.current {
					want.current++
				}
				if k.view.Ready {
					want.ready++
				}
				if k.view.Rebooting() {
					want.rebooting++
					rebooting = append(rebooting, k)
				}
				if k.view.WantsAdmission() {
					queue = append(queue, k)
				}
			}
		}
		slices.SortFunc(queue, inQueue)
		slices.SortFunc(active, byName)
		slices.SortFunc(rebooting, byName)
		if len(queue) < 30 || len(active) < 20 {
			t.Fatalf("round %d: only %d nodes wait and %d are active", round, len(queue), len(active))
		}
		if got, want := names(m.queue), names(queue); !slices.Equal(got, want) {
			t.Fatalf("round %d: the kept queue is %v, a sort says %v", round, got, want)
		}
		if got, want := names(m.active), names(active); !slices.Equal(got, want) {
			t.Fatalf("round %d: the active members are %v, a sort says %v", round, got, want)
		}
		if got, want := names(m.rebooting), names(rebooting); !slices.Equal(got, want) || len(want) < 10 {
			t.Fatalf("round %d: the quiet members rebooting are %v, a sort says %v", round, got, want)
		}
		if m.tally != want {
			t.Fatalf("round %d: the tally is %+v, a count says %+v", round, m.tally, want)
		}
		for name, k := range all {
			switch r := rnd.IntN(40); {
			case r == 0: // gone
				delete(all, name)
				m.set(name, nil)
			case r <= 6: // written: a new view, maybe asking later, maybe another kind
				put(view(name, k.view.queuedAt.Add(time.Duration(rnd.IntN(3))*time.Second), rnd.IntN(8)))
			}
		}
		for range rnd.IntN(12) {
			put(view(fmt.Sprintf("m-%03d-%d", round, rnd.IntN(1000)), base.Add(time.Duration(rnd.IntN(60))*time.Second), rnd.IntN(8)))
		}
	}
}
