package gate

import (
	"cmp"
	"slices"
	"time"
)

// plan is the gate's decision for one pool at one moment.
type plan struct {
	// admit lists the nodes to admit now, in the order they asked.
	admit []string
	// waiting lists the nodes that asked and were not admitted, in order,
	// as far as the plan read them; unlisted counts those it did not read
	// (planAdmissions), which wait too.
	waiting  []string
	unlisted int
	// unavailable is the number of unavailable nodes before admitting.
	unavailable int
	// maxUnavailable is the pool's resolved budget.
	maxUnavailable int
	// outsideWindow counts waiting nodes held back by closed windows.
	outsideWindow int
	// nextOpening is the earliest moment a node held back by windows may
	// be admitted; zero when none of them knows.
	nextOpening time.Time
	// blockedByQuery counts waiting nodes that would have been admitted but
	// for a blocking query.
	blockedByQuery int
	// optedOut counts waiting nodes an opt-out holds.
	optedOut int
}

// pending is how many nodes asked and were not admitted.
func (p plan) pending() int { return len(p.waiting) + p.unlisted }

// approvable picks which drained nodes may be approved now. The budget is
// checked again at approval, as planAdmissions checked it at admission, so
// that a budget lowered while nodes drain (or nodes gone NotReady meanwhile)
// holds back the approvals it no longer allows: nodes admitted first are
// approved first, the others wait, cordoned, holding their slot. A node that
// was unavailable before kmaint touched it (cordoned by someone else, or not
// Ready) costs nothing, as at admission, unless the pool is over budget.
// counted are the nodes that count against the budget besides the views:
// its quiet members rebooting (poolState.counted). It also returns how many nodes
// count against the budget.
func approvable(views []*nodeView, counted, maxUnavailable int) (ok map[string]bool, used int) {
	used = counted
	var draining []*nodeView
	for _, v := range views {
		switch {
		case v.Draining() && !v.inflight && !approvalFree(v):
			draining = append(draining, v)
		case v.unavailable():
			used++
		}
	}
	slices.SortFunc(draining, func(a, b *nodeView) int {
		if c := a.Admission.Time.Compare(b.Admission.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Node.Name, b.Node.Name)
	})
	ok = map[string]bool{}
	for _, v := range views {
		if v.Draining() && approvalFree(v) && used <= maxUnavailable {
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

// approvalFree reports whether approving a draining node costs the budget
// nothing: it was unavailable whatever kmaint did.
func approvalFree(v *nodeView) bool {
	return !v.Ready || v.Unschedulable && !v.Cordoned
}

// planAdmissions picks which waiting nodes to admit: in the order they asked,
// while the budget lasts. A node that is already unavailable (cordoned by a
// person, not Ready) costs nothing to admit, since it counts against the
// budget already; without that rule a person who cordons a node before asking
// for its reboot would wait forever in a pool of maxUnavailable 1.
//
// With poolHeld (a pool-wide hold, policies.Holds), every node waits. A
// node whose windows are all shut (see nodeView.windowOpen: its pool's, its
// requests' policies', unless a request ignores windows) waits; the budget
// holds for the others all the same. With queryBlocks (a blocking query
// holds the pool), no node is admitted: the plan then counts those that
// would have been (blockedByQuery).
//
// A node an opt-out holds (optOut) waits and gives its turn to the next.
//
// A node in flight in the pool counts against its budget until its
// maintenance ends, whatever its labels say (pools.Of): moving it out
// frees no slot early, moving one in takes none.
//
// q holds the pool's ordinary waiting members in the queue's order
// (package members), read with the waiting nodes among views; nil plans for views
// alone. Past the budget, and without windows (q.counted), the ordinary
// members left are counted, not read: each would wait for the budget.
//
// counted are the nodes that count against the budget besides the views
// (poolState.counted).
func planAdmissions(views []*nodeView, q *ordinaryQueue, counted, maxUnavailable int, poolHeld, queryBlocks bool) plan {
	p := plan{maxUnavailable: maxUnavailable, unavailable: counted}
	for _, v := range views {
		if v.unavailable() {
			p.unavailable++
		}
	}
	order := newWaitOrder(views, q)
	free := maxUnavailable - p.unavailable
	// none: no node may be admitted, whatever its windows.
	none := poolHeld || maxUnavailable == 0
	for v, ordinary := order.next(); v != nil; v, ordinary = order.next() {
		if ordinary && q.counted && (none || free <= 0) {
			// An ordinary member costs a slot, has no opt-out and no
			// window: it and every one after it waits. The first are
			// named, as the pool's messages name them.
			named, more := order.skipOrdinary(waitingNamed - 1 - len(p.waiting))
			p.waiting = append(append(p.waiting, v.Node.Name), named...)
			p.unlisted += more
			continue
		}
		if v.optOut != nil {
			// Held by an opt-out: it costs nothing and its turn passes on.
			p.waiting = append(p.waiting, v.Node.Name)
			p.optedOut++
			continue
		}
		cost := 1
		if v.unavailable() {
			cost = 0
		}
		if !v.windowOpen && !none {
			p.waiting = append(p.waiting, v.Node.Name)
			p.outsideWindow++
			if !v.nextOpening.IsZero() && (p.nextOpening.IsZero() || v.nextOpening.Before(p.nextOpening)) {
				p.nextOpening = v.nextOpening
			}
			continue
		}
		if none || cost > free {
			p.waiting = append(p.waiting, v.Node.Name)
			continue
		}
		if queryBlocks {
			p.waiting = append(p.waiting, v.Node.Name)
			p.blockedByQuery++
			free -= cost
			continue
		}
		free -= cost
		p.admit = append(p.admit, v.Node.Name)
	}
	return p
}
