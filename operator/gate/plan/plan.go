package plan

import (
	"cmp"
	"slices"
	"time"

	"github.com/kmaint/kmaint/operator/gate/view"
)

// Plan is the gate's decision for one pool at one moment.
type Plan struct {
	// Admit lists the nodes to admit now, in the order they asked.
	Admit []string
	// Waiting lists the nodes that asked and were not admitted, in order,
	// as far as the plan read them; Unlisted counts those it did not read
	// (Admissions), which wait too.
	Waiting  []string
	Unlisted int
	// Unavailable is the number of unavailable nodes before admitting.
	Unavailable int
	// MaxUnavailable is the pool's resolved budget.
	MaxUnavailable int
	// OutsideWindow counts waiting nodes held back by closed windows.
	OutsideWindow int
	// NextOpening is the earliest moment a node held back by windows may
	// be admitted; zero when none of them knows.
	NextOpening time.Time
	// BlockedByQuery counts waiting nodes that would have been admitted but
	// for a blocking query.
	BlockedByQuery int
	// OptedOut counts waiting nodes an opt-out holds.
	OptedOut int
}

// Pending is how many nodes asked and were not admitted.
func (p Plan) Pending() int { return len(p.Waiting) + p.Unlisted }

// WaitingNamed is how many waiting nodes a pool's messages name.
const WaitingNamed = 20

// Approvable picks which drained nodes may be approved now. The budget is
// checked again at approval, as Admissions checked it at admission, so
// that a budget lowered while nodes drain (or nodes gone NotReady meanwhile)
// holds back the approvals it no longer allows: nodes admitted first are
// approved first, the others wait, cordoned, holding their slot. A node that
// was unavailable before kmaint touched it (cordoned by someone else, or not
// Ready) costs nothing, as at admission, unless the pool is over budget.
// counted are the nodes that count against the budget besides the views:
// its quiet members rebooting (the gate's poolState.counted). It also returns how many nodes
// count against the budget.
func Approvable(views []*view.Node, counted, maxUnavailable int) (ok map[string]bool, used int) {
	used = counted
	var draining []*view.Node
	for _, v := range views {
		switch {
		case v.Draining() && !v.AdmittedUnseen && !ApprovalFree(v):
			draining = append(draining, v)
		case v.UsesBudget():
			used++
		}
	}
	slices.SortFunc(draining, func(a, b *view.Node) int {
		if c := a.Admission.Time.Compare(b.Admission.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Node.Name, b.Node.Name)
	})
	ok = map[string]bool{}
	for _, v := range views {
		if v.Draining() && ApprovalFree(v) && used <= maxUnavailable {
			ok[v.Node.Name] = true
		}
	}
	for _, v := range draining {
		if used < maxUnavailable {
			ok[v.Node.Name] = true
		}
		used++
	}
	return ok, used
}

// ApprovalFree reports whether approving a draining node costs the budget
// nothing: it was unavailable whatever kmaint did.
func ApprovalFree(v *view.Node) bool {
	return !v.Ready || v.Unschedulable && !v.Cordoned
}

// Admissions picks which waiting nodes to admit: in the order they asked,
// while the budget lasts. A node that is already unavailable (cordoned by a
// person, not Ready) costs nothing to admit, since it counts against the
// budget already; without that rule a person who cordons a node before asking
// for its reboot would wait forever in a pool of maxUnavailable 1.
//
// With poolHeld (a pool-wide hold, policies.Holds), every node waits. A
// node whose windows are all shut (see view.Node.WindowOpen: its pool's, its
// requests' policies', unless a request ignores windows) waits; the budget
// holds for the others all the same. With queryBlocks (a blocking query
// holds the pool), no node is admitted: the plan then counts those that
// would have been (BlockedByQuery).
//
// A node an opt-out holds (OptedOut) waits and gives its turn to the next.
//
// A node in flight in the pool counts against its budget until its
// maintenance ends, whatever its labels say (pools.Of): moving it out
// frees no slot early, moving one in takes none.
//
// q holds the pool's ordinary waiting members in the queue's order
// (package members), read with the waiting nodes among views; nil plans for views
// alone. Past the budget, and without windows (NewQueue's counted), the ordinary
// members left are counted, not read: each would wait for the budget.
//
// counted are the nodes that count against the budget besides the views
// (the gate's poolState.counted).
func Admissions(views []*view.Node, q *Queue, counted, maxUnavailable int, poolHeld, queryBlocks bool) Plan {
	p := Plan{MaxUnavailable: maxUnavailable, Unavailable: counted}
	for _, v := range views {
		if v.UsesBudget() {
			p.Unavailable++
		}
	}
	order := newWaitOrder(views, q)
	free := maxUnavailable - p.Unavailable
	// none: no node may be admitted, whatever its windows.
	none := poolHeld || maxUnavailable == 0
	for v, ordinary := order.next(); v != nil; v, ordinary = order.next() {
		if ordinary && q.counted && (none || free <= 0) {
			// An ordinary member costs a slot, has no opt-out and no
			// window: it and every one after it waits. The first are
			// named, as the pool's messages name them.
			named, more := order.skipOrdinary(WaitingNamed - 1 - len(p.Waiting))
			p.Waiting = append(append(p.Waiting, v.Node.Name), named...)
			p.Unlisted += more
			continue
		}
		if v.OptedOut != nil {
			// Held by an opt-out: it costs nothing and its turn passes on.
			p.Waiting = append(p.Waiting, v.Node.Name)
			p.OptedOut++
			continue
		}
		cost := 1
		if v.UsesBudget() {
			cost = 0
		}
		if !v.WindowOpen && !none {
			p.Waiting = append(p.Waiting, v.Node.Name)
			p.OutsideWindow++
			if !v.NextOpening.IsZero() && (p.NextOpening.IsZero() || v.NextOpening.Before(p.NextOpening)) {
				p.NextOpening = v.NextOpening
			}
			continue
		}
		if none || cost > free {
			p.Waiting = append(p.Waiting, v.Node.Name)
			continue
		}
		if queryBlocks {
			p.Waiting = append(p.Waiting, v.Node.Name)
			p.BlockedByQuery++
			free -= cost
			continue
		}
		free -= cost
		p.Admit = append(p.Admit, v.Node.Name)
	}
	return p
}
