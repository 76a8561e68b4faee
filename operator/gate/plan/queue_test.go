package plan

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/operator/gate/members"
	"github.com/kmaint/kmaint/operator/gate/view"
)

// What a pool's members keep, node by node, is what reading and sorting
// every node would find, whatever changed in between: nodes written (a new
// view, maybe asked later), gone, new, admitted, or no longer ordinary.
func TestMembersKeepWhatReadingEveryNodeWouldFind(t *testing.T) {
	base := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	rnd := rand.New(rand.NewPCG(7, 44))
	node := func(name string, at time.Time, kind int) *member {
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
		v := view.Node{NodeState: st, WindowOpen: true, QueuedAt: at}
		place := v.Place("", true)
		v.Queued = place.Queued
		return &member{Value: view.Kept{View: v}, Place: place}
	}
	names := func(ks []*member) []string {
		var out []string
		for _, k := range ks {
			out = append(out, k.Value.View.Node.Name)
		}
		return out
	}
	queueOrder := func(a, b *member) int { return KeptOrder().Queue(&a.Value, &b.Value) }
	byName := func(a, b *member) int { return cmp.Compare(a.Value.View.Node.Name, b.Value.View.Node.Name) }
	m := members.NewPool(KeptOrder())
	all := map[string]*member{}
	put := func(k *member) {
		all[k.Value.View.Node.Name] = k
		m.Set(k.Value.View.Node.Name, k)
	}
	for i := range 300 {
		// Many ask in the same second: the names order them.
		put(node(fmt.Sprintf("n-%03d", i), base.Add(time.Duration(rnd.IntN(50))*time.Second), rnd.IntN(8)))
	}
	for round := range 60 {
		var queue, active, rebooting []*member
		var want members.Tally
		for _, k := range all {
			switch v := &k.Value.View; {
			case !k.Place.Quiet:
				active = append(active, k)
			default:
				want.Nodes++
				if k.Place.Current {
					want.Current++
				}
				if v.Ready {
					want.Ready++
				}
				if v.Rebooting() {
					want.Rebooting++
					rebooting = append(rebooting, k)
				}
				if v.WantsAdmission() {
					queue = append(queue, k)
				}
			}
		}
		slices.SortFunc(queue, queueOrder)
		slices.SortFunc(active, byName)
		slices.SortFunc(rebooting, byName)
		if len(queue) < 30 || len(active) < 20 {
			t.Fatalf("round %d: only %d nodes wait and %d are active", round, len(queue), len(active))
		}
		if got, want := names(m.Queue()), names(queue); !slices.Equal(got, want) {
			t.Fatalf("round %d: the kept queue is %v, a sort says %v", round, got, want)
		}
		if got, want := names(m.Active()), names(active); !slices.Equal(got, want) {
			t.Fatalf("round %d: the active members are %v, a sort says %v", round, got, want)
		}
		if got, want := names(m.Rebooting()), names(rebooting); !slices.Equal(got, want) || len(want) < 10 {
			t.Fatalf("round %d: the quiet members rebooting are %v, a sort says %v", round, got, want)
		}
		if m.Tally() != want {
			t.Fatalf("round %d: the tally is %+v, a count says %+v", round, m.Tally(), want)
		}
		for name, k := range all {
			switch r := rnd.IntN(40); {
			case r == 0: // gone
				delete(all, name)
				m.Set(name, nil)
			case r <= 6: // written: a new view, maybe asking later, maybe another kind
				put(node(name, k.Value.View.QueuedAt.Add(time.Duration(rnd.IntN(3))*time.Second), rnd.IntN(8)))
			}
		}
		for range rnd.IntN(12) {
			put(node(fmt.Sprintf("m-%03d-%d", round, rnd.IntN(1000)), base.Add(time.Duration(rnd.IntN(60))*time.Second), rnd.IntN(8)))
		}
	}
}
