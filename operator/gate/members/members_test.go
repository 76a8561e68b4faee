package members

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// node is a member's value in these tests: asked orders the queue, then
// the name.
type node struct {
	name  string
	asked int
}

func before(a, b *node) int {
	if c := cmp.Compare(a.asked, b.asked); c != 0 {
		return c
	}
	return cmp.Compare(a.name, b.name)
}

var order = Order[node]{Name: func(n *node) string { return n.name }, Queue: before}

// set is one Set: a member of name asking at asked with place p; drop sets
// nil.
type set struct {
	name  string
	asked int
	p     Place
	drop  bool
}

var (
	active    = Place{Ready: true, Current: true}
	ordinary  = Place{Quiet: true, Ready: true, Current: true}
	waiting   = Place{Quiet: true, Queued: true, Ready: true}
	rebooting = Place{Quiet: true, Rebooting: true}
)

func names(ms []*Member[node]) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.Value.name)
	}
	return out
}

func apply(p *Pool[node], sets []set) {
	for _, s := range sets {
		if s.drop {
			p.Set(s.name, nil)
			continue
		}
		p.Set(s.name, &Member[node]{Value: node{name: s.name, asked: s.asked}, Place: s.p})
	}
}

// Each member goes where its place says, whatever order the Sets come in,
// and a member Set again, or dropped, leaves its last place.
func TestSetPutsEachMemberInItsPlace(t *testing.T) {
	cases := map[string]struct {
		sets []set
		// want* are the pool's lists: active and rebooting by name, the
		// queue by when its members asked, then by name.
		wantActive, wantRebooting, wantQueue []string
		// wantTally counts the quiet members.
		wantTally Tally
	}{
		"empty": {
			wantActive: []string{}, wantRebooting: []string{}, wantQueue: []string{},
		},
		"each kind, out of order": {
			sets: []set{
				{name: "d", p: active}, {name: "c", asked: 2, p: waiting}, {name: "a", p: rebooting},
				{name: "b", p: active}, {name: "e", asked: 1, p: waiting}, {name: "f", p: ordinary},
			},
			wantActive: []string{"b", "d"}, wantRebooting: []string{"a"}, wantQueue: []string{"e", "c"},
			wantTally: Tally{Nodes: 4, Ready: 3, Current: 1, Rebooting: 1},
		},
		"the same time: by name": {
			sets:       []set{{name: "z", asked: 5, p: waiting}, {name: "m", asked: 5, p: waiting}, {name: "y", asked: 4, p: waiting}},
			wantActive: []string{}, wantRebooting: []string{}, wantQueue: []string{"y", "m", "z"},
			wantTally: Tally{Nodes: 3, Ready: 3},
		},
		"set again: it moves": {
			sets: []set{
				{name: "a", asked: 1, p: waiting}, {name: "b", asked: 2, p: waiting},
				{name: "a", asked: 3, p: waiting}, {name: "b", p: active},
			},
			wantActive: []string{"b"}, wantRebooting: []string{}, wantQueue: []string{"a"},
			wantTally: Tally{Nodes: 1, Ready: 1},
		},
		"dropped: gone from everywhere": {
			sets: []set{
				{name: "a", p: rebooting}, {name: "b", p: active}, {name: "c", p: waiting},
				{name: "a", drop: true}, {name: "b", drop: true}, {name: "c", drop: true}, {name: "x", drop: true},
			},
			wantActive: []string{}, wantRebooting: []string{}, wantQueue: []string{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := NewPool(order)
			apply(p, tc.sets)
			if got := names(p.Active()); !slices.Equal(got, tc.wantActive) {
				t.Errorf("active %v, want %v", got, tc.wantActive)
			}
			if got := names(p.Rebooting()); !slices.Equal(got, tc.wantRebooting) {
				t.Errorf("rebooting %v, want %v", got, tc.wantRebooting)
			}
			if got := names(p.Queue()); !slices.Equal(got, tc.wantQueue) {
				t.Errorf("queue %v, want %v", got, tc.wantQueue)
			}
			if got := p.Tally(); got != tc.wantTally {
				t.Errorf("tally %+v, want %+v", got, tc.wantTally)
			}
			p.Reset()
			if len(p.Active())+len(p.Rebooting())+len(p.Queue()) != 0 || p.Tally() != (Tally{}) || p.Get("a") != nil {
				t.Errorf("after Reset: active %v, rebooting %v, queue %v, tally %+v", names(p.Active()), names(p.Rebooting()), names(p.Queue()), p.Tally())
			}
		})
	}
}

// What a pool keeps, Set by Set, is what sorting and counting every member
// would find, whatever changed in between.
func TestPoolKeepsWhatSortingEveryMemberWouldFind(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 9))
	places := []Place{active, ordinary, waiting, rebooting, {Quiet: true, Queued: true, Current: true}}
	p := NewPool(order)
	all := map[string]*Member[node]{}
	put := func(name string) {
		m := &Member[node]{Value: node{name: name, asked: rnd.IntN(20)}, Place: places[rnd.IntN(len(places))]}
		all[name] = m
		p.Set(name, m)
	}
	for i := range 200 {
		put(fmt.Sprintf("n-%03d", i))
	}
	for round := range 40 {
		var act, reb, queue []*Member[node]
		var want Tally
		for _, m := range all {
			if !m.Place.Quiet {
				act = append(act, m)
				continue
			}
			want.add(m.Place, 1)
			if m.Place.Rebooting {
				reb = append(reb, m)
			}
			if m.Place.Queued {
				queue = append(queue, m)
			}
		}
		byName := func(a, b *Member[node]) int { return cmp.Compare(a.Value.name, b.Value.name) }
		slices.SortFunc(act, byName)
		slices.SortFunc(reb, byName)
		slices.SortFunc(queue, func(a, b *Member[node]) int { return before(&a.Value, &b.Value) })
		if got, want := names(p.Active()), names(act); !slices.Equal(got, want) {
			t.Fatalf("round %d: active %v, a sort says %v", round, got, want)
		}
		if got, want := names(p.Rebooting()), names(reb); !slices.Equal(got, want) {
			t.Fatalf("round %d: rebooting %v, a sort says %v", round, got, want)
		}
		if got, want := names(p.Queue()), names(queue); !slices.Equal(got, want) || len(want) < 10 {
			t.Fatalf("round %d: queue %v, a sort says %v", round, got, want)
		}
		if p.Tally() != want {
			t.Fatalf("round %d: tally %+v, a count says %+v", round, p.Tally(), want)
		}
		for name := range all {
			switch r := rnd.IntN(30); {
			case r == 0:
				delete(all, name)
				p.Set(name, nil)
			case r <= 5:
				put(name)
			}
		}
		for range rnd.IntN(8) {
			put(fmt.Sprintf("m-%02d-%03d", round, rnd.IntN(1000)))
		}
	}
}

// A pass makes every active member ready when it starts, and a quiet one
// when it is first pulled, once; what it pulled it no longer counts. The
// next pass starts afresh.
func TestPassPullsEachQuietMemberOnce(t *testing.T) {
	p := NewPool(order)
	apply(p, []set{
		{name: "b", p: active}, {name: "a", p: active},
		{name: "q1", asked: 1, p: waiting}, {name: "q2", asked: 2, p: waiting}, {name: "r", p: rebooting},
	})
	var prepared []string
	prepare := func(m *Member[node]) { prepared = append(prepared, m.Value.name) }
	s := p.Start(prepare)
	if want := []string{"a", "b"}; !slices.Equal(prepared, want) {
		t.Fatalf("Start prepared %v, want the active members %v", prepared, want)
	}
	q1 := p.Get("q1")
	if s.HasPulled(q1) {
		t.Fatal("q1 pulled before any Pull")
	}
	if !s.Pull(q1) || s.Pull(q1) {
		t.Fatal("Pull(q1) twice: want true, then false")
	}
	if want := []string{"a", "b", "q1"}; !slices.Equal(prepared, want) {
		t.Fatalf("prepared %v, want %v: q1 once", prepared, want)
	}
	if !s.HasPulled(q1) || s.HasPulled(p.Get("q2")) {
		t.Fatal("HasPulled: want q1 and not q2")
	}
	if got := names(s.Pulled()); !slices.Equal(got, []string{"q1"}) {
		t.Fatalf("Pulled %v, want [q1]", got)
	}
	if got, want := s.Tally(), (Tally{Nodes: 2, Ready: 1, Rebooting: 1}); got != want {
		t.Fatalf("the pass counts %+v, want %+v: q1 is read, not counted", got, want)
	}
	if got, want := p.Tally(), (Tally{Nodes: 3, Ready: 2, Rebooting: 1}); got != want {
		t.Fatalf("the pool counts %+v, want %+v: a pull changes only the pass", got, want)
	}
	if got := names(s.Queue()); !slices.Equal(got, []string{"q1", "q2"}) {
		t.Fatalf("the pass's queue %v, want the pool's [q1 q2]", got)
	}
	if got := names(s.Rebooting()); !slices.Equal(got, []string{"r"}) {
		t.Fatalf("the pass's rebooting %v, want the pool's [r]", got)
	}

	prepared = nil
	next := p.Start(prepare)
	if next.HasPulled(q1) || len(next.Pulled()) != 0 || next.Tally() != p.Tally() {
		t.Fatalf("the next pass starts with q1 pulled (%t), %d pulled, tally %+v", next.HasPulled(q1), len(next.Pulled()), next.Tally())
	}
	if !next.Pull(q1) {
		t.Fatal("the next pass does not pull q1 again")
	}
}

// Pools keeps one Pool per pool until it is forgotten.
func TestPoolsKeepsOnePoolEach(t *testing.T) {
	ps := NewPools(order)
	a := ps.Of("a")
	apply(a, []set{{name: "n", p: ordinary}})
	if ps.Of("a") != a || ps.Of("b") == a {
		t.Fatal("Of: want the same pool for a, another for b")
	}
	ps.Forget("a")
	if got := ps.Of("a"); got == a || got.Tally() != (Tally{}) {
		t.Fatalf("after Forget, Of(a) is the old pool (%t) or counts %+v", got == a, got.Tally())
	}
}
