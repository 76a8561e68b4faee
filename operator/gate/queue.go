package gate

import (
	"cmp"
	"slices"
)

// The queue: a pool's waiting nodes in the order they asked. Its ordinary
// members (members) are kept in that order between reconciles, each put in
// its place when its view is made again; the other waiting nodes, few, are
// sorted at each plan (some of them move with the time: queueMoves), and
// both are read together, head first (waitOrder). Sorting every waiting
// node at every reconcile was, at the start of a rollout of thousands of
// nodes, the plan's own cost; reading every one of them, a tenth of a
// reconcile at 5000 nodes in which 250 could be admitted at most.

// before is the queue's order: when the nodes asked (nodeView.requestTime),
// then their names.
func before(a, b *nodeView) int {
	if c := a.requestTime().Compare(b.requestTime()); c != 0 {
		return c
	}
	return cmp.Compare(a.Node.Name, b.Node.Name)
}

// ordinaryQueue is the ordinary members that ask to be admitted, in the
// queue's order (members.queue), as one plan reads them.
type ordinaryQueue struct {
	queue []*keptView
	// pull makes a member's view ready for this pass and puts it among
	// the reconcile's views, once (poolState.pull).
	pull func(*keptView) *nodeView
	// pulled are the views pulled in this pass so far.
	pulled func() []*nodeView
	// pass is the pass of the pool's members: a view pulled in it has it.
	pass uint64
	// counted is true when the plan may count the ordinary members past
	// the budget instead of reading them: no window or freeze applies in
	// the pool, so each costs one slot and nothing of the time holds it.
	counted bool
}

// waitOrder reads the waiting nodes head first: the ordinary members of q
// merged with others, sorted. It returns nil at the end; ordinary says
// which list a view came from. A nil q has no ordinary members.
type waitOrder struct {
	q      *ordinaryQueue
	others []*nodeView
	i, j   int
}

// newWaitOrder orders the waiting nodes among views that q does not hold,
// to be read with q's.
func newWaitOrder(views []*nodeView, q *ordinaryQueue) *waitOrder {
	var others []*nodeView
	for _, v := range views {
		if v.waiting() && (q == nil || !v.queued) {
			others = append(others, v)
		}
	}
	slices.SortFunc(others, before)
	return &waitOrder{q: q, others: others}
}

// next returns the next waiting node; nil at the end.
func (w *waitOrder) next() (v *nodeView, ordinary bool) {
	for {
		var o *nodeView
		if w.q != nil && w.i < len(w.q.queue) {
			o = &w.q.queue[w.i].view
		}
		if w.j < len(w.others) && (o == nil || before(w.others[w.j], o) < 0) {
			w.j++
			return w.others[w.j-1], false
		}
		if o == nil {
			return nil, false
		}
		v := w.q.pull(w.q.queue[w.i])
		w.i++
		if v.waiting() {
			return v, true
		}
	}
}

// skipOrdinary passes over the ordinary members not read yet: it names the
// first n of them that wait, and counts the others that do. Those pulled
// already that do not wait (an admission the cache does not show yet) are
// left out.
func (w *waitOrder) skipOrdinary(n int) (named []string, more int) {
	if w.q == nil || w.i >= len(w.q.queue) {
		return nil, 0
	}
	skipped := func(v *nodeView) bool { return v.pass == w.q.pass && !v.waiting() }
	for ; w.i < len(w.q.queue) && len(named) < n; w.i++ {
		if v := &w.q.queue[w.i].view; !skipped(v) {
			named = append(named, v.Node.Name)
		}
	}
	if w.i >= len(w.q.queue) {
		return named, 0
	}
	head := &w.q.queue[w.i].view
	more = len(w.q.queue) - w.i
	for _, v := range w.q.pulled() {
		if v.queued && skipped(v) && before(v, head) >= 0 {
			more--
		}
	}
	w.i = len(w.q.queue)
	return named, more
}
