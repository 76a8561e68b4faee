package checker

import (
	"slices"
	"sort"
)

// relisted replays a list of Nodes made after a blind window: the changes
// it shows were made somewhere in the window, in an order not seen.
//
// An admission it shows first is held to the budget all the same: every
// node kmaint holds at the list was held at the moment of the last
// admission made in the window, whichever that was (a hold that began
// after it began with an admission, and a node admitted, approved and
// settling is held all along). So the pool's count at the list, each node
// admitted in the window with it, must be within the largest budget the
// pool had at any moment of the window. Approvals likewise, with the nodes
// past their drain. The nodes down of their own are not counted: one may
// have come up, or gone down, in the window unseen (ExcusedListedDown).
// Where the list shows no new admission, a count that rose past that
// budget broke it too, whatever happened in between.
func (r *replay) relisted(k int64, l *relist) {
	before := map[string]*nodeState{}
	var touched []string
	for _, s := range l.nodes {
		t := r.track(s.name)
		before[s.name] = t.cur
		for _, p := range pools(t.cur, s) {
			if !slices.Contains(touched, p) {
				touched = append(touched, p)
			}
		}
	}
	counts := map[string]int{}
	for _, p := range touched {
		counts[p] = r.count(p)
	}
	for _, s := range l.nodes {
		at := s.rv
		if at <= 0 {
			at = k
		}
		r.set(r.track(s.name), at, s)
	}
	admittedIn, approvedIn := map[string][]string{}, map[string][]string{}
	for _, s := range l.nodes {
		prev := before[s.name]
		if s.admRaw != "" && s.admissionID() != prev.admissionID() {
			r.out.checked[CheckedAdmissions]++
			admittedIn[s.pool()] = append(admittedIn[s.pool()], s.name)
		}
		if s.approved != "" && (prev == nil || prev.approved != s.approved) {
			r.out.checked[CheckedApprovals]++
			approvedIn[s.pool()] = append(approvedIn[s.pool()], s.name)
			if s.adm == nil || s.adm.BootID != s.approved {
				r.out.violate(r.clock.made(k), Approval, "node %s: reboot-approved names boot %s, and its admission does not (first seen in a list, v%d)",
					s.name, s.approved, s.rv)
			}
		}
	}
	past := func(o *nodeState) bool { return o.rebooting() || o.held() && !o.ready }
	for pool, names := range admittedIn {
		r.listedWrites(k, l, pool, names, "admitted", (*nodeState).held, (*poolState).admitBudget)
	}
	for pool, names := range approvedIn {
		r.listedWrites(k, l, pool, names, "approved", past, (*poolState).approveBudget)
	}
	for _, p := range touched {
		if _, checked := admittedIn[p]; !checked {
			r.standingListed(k, l, p, counts[p])
		}
	}
}

// listedWrites holds the admissions or approvals a list showed first in a
// pool to the largest budget the pool had in the window, counting every
// node kmaint holds (counted) at the list.
func (r *replay) listedWrites(k int64, l *relist, pool string, names []string, what string, counted func(*nodeState) bool, of func(*poolState) int) {
	r.out.checked[CheckedStanding]++
	var held []string
	down := false
	for name, t := range r.nodes {
		switch o := t.cur; {
		case o == nil || o.pool() != pool:
		case counted(o):
			held = append(held, name)
		case o.down():
			down = true
		}
	}
	sort.Strings(held)
	sort.Strings(names)
	budget, ok := r.budgetOver(pool, l.from, k, of)
	at := r.clock.made(k)
	switch {
	case !ok:
		r.out.violate(at, Budget, "nodes %v %s in pool %q, which the checker never saw (first seen in a list)", names, what, pool)
	case len(held) > budget:
		r.out.violate(at, Budget, "pool %s: %v %s in a blind window (first seen in a list, v%d): the last of them found %v held by kmaint, past %d, the largest budget the pool had in the window (%s)",
			pool, names, what, k, held, budget, r.budgetsBefore(pool, k))
	case down:
		r.out.excuse(ExcusedListedDown, 0)
	}
	if n := r.count(pool); n > r.strictAt(pool, k) {
		r.over[pool] = n
	} else {
		delete(r.over, pool)
	}
}

// strictAt is the pool's admission budget in effect at version k.
func (r *replay) strictAt(pool string, k int64) int {
	b, _ := r.budgetAt(pool, k, (*poolState).admitBudget)
	return b.strict
}

// standingListed holds a pool's count after a list that showed no new
// admission in it to its budget: a count that rose in the window past the
// largest budget the pool had in it broke it, whatever happened in between.
func (r *replay) standingListed(k int64, l *relist, pool string, before int) {
	r.out.checked[CheckedStanding]++
	n := r.count(pool)
	now, known := r.budgetAt(pool, k, (*poolState).admitBudget)
	most, _ := r.budgetOver(pool, l.from, k, (*poolState).admitBudget)
	over, lowered := r.over[pool]
	switch {
	case !known:
	case n <= now.strict:
		delete(r.over, pool)
	case n > most && n > before && !(lowered && n <= over):
		r.out.violate(r.clock.made(k), Budget, "pool %s holds %d nodes, listed after a blind window, past %d, the largest budget it had in the window, and up from %d before it (%s)",
			pool, n, most, before, r.budgetsBefore(pool, k))
		r.over[pool] = n
	default:
		r.over[pool] = n
	}
}
