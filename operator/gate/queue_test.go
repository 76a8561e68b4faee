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

// The queue kept between plans orders the waiting nodes as sorting them
// all would, whatever changed in between: nodes written (a new view, maybe
// asked later), gone, new, admitted, or whose place moves with the time.
func TestAKeptQueueOrdersAsASortWould(t *testing.T) {
	base := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	rnd := rand.New(rand.NewPCG(7, 44))
	waitingView := func(name string, at time.Time, moves bool) *nodeView {
		st := protocol.NodeState{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, BootID: "b", Ready: true,
			Requested: &protocol.Requested{BootID: "b", Requests: []protocol.Request{{ID: "r-" + name, Source: "host", Time: at}}}}
		return &nodeView{NodeState: st, windowOpen: true, queuedAt: at, queueMoves: moves}
	}
	var views []*nodeView
	for i := range 200 {
		// Many ask in the same second: the names order them.
		views = append(views, waitingView(fmt.Sprintf("n-%03d", i), base.Add(time.Duration(rnd.IntN(50))*time.Second), i%17 == 0))
	}
	names := func(vs []*nodeView) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.Node.Name)
		}
		return out
	}
	q := &queue{}
	for round := range 60 {
		got, want := names(q.order(views)), names((*queue)(nil).order(views))
		if len(want) < 50 {
			t.Fatalf("round %d: only %d nodes wait", round, len(want))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: the kept queue is %v, a sort says %v", round, got, want)
		}
		next := views[:0:0]
		for _, v := range views {
			switch r := rnd.IntN(20); {
			case r == 0: // gone
			case r == 1: // written: a new view, maybe asking later
				next = append(next, waitingView(v.Node.Name, v.queuedAt.Add(time.Duration(rnd.IntN(3))*time.Second), v.queueMoves))
			case r == 2: // admitted: it waits no more
				w := *v
				w.Admission = &protocol.Admission{BootID: "b"}
				next = append(next, &w)
			case v.queueMoves: // its place moves with the time
				v.queuedAt = base.Add(time.Duration(rnd.IntN(60)) * time.Second)
				next = append(next, v)
			default:
				next = append(next, v)
			}
		}
		for range rnd.IntN(12) {
			next = append(next, waitingView(fmt.Sprintf("m-%03d-%d", round, rnd.IntN(1000)), base.Add(time.Duration(rnd.IntN(60))*time.Second), false))
		}
		views = next
	}
}
