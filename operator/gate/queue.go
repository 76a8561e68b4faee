package gate

import (
	"cmp"
	"slices"

	"github.com/kmaint/kmaint/operator/gate/members"
)

// The queue: a pool's waiting nodes in the order they asked. Its ordinary
// members (package members) are kept in that order between reconciles, each put in
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

// keptOrder is how a pool's members sort the kept views: the queue in
// before's order.
func keptOrder() members.Order[keptView] {
	return members.Order[keptView]{
		Name:  func(k *keptView) string { return k.view.Node.Name },
		Queue: func(a, b *keptView) int { return before(&a.view, &b.view) },
	}
}

// ordinaryQueue is the ordinary members that ask to be admitted, in the
// queue's order (members.Pool.Queue), as one plan reads them.
type ordinaryQueue struct {
	// members is the reconcile's pass over the pool's members: the plan
	// pulls each member it reads through it, once.
	members *members.Pass[keptView]
	queue   []*member
	// counted is true when the plan may count the ordinary members past
	// the budget instead of reading them (timeless).
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
			o = &w.q.queue[w.i].Value.view
		}
		if w.j < len(w.others) && (o == nil || before(w.others[w.j], o) < 0) {
			w.j++
			return w.others[w.j-1], false
		}
		if o == nil {
			return nil, false
		}
		k := w.q.queue[w.i]
		w.q.members.Pull(k)
		v := &k.Value.view
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
	skipped := func(k *member) bool { return w.q.members.HasPulled(k) && !k.Value.view.waiting() }
	for ; w.i < len(w.q.queue) && len(named) < n; w.i++ {
		if k := w.q.queue[w.i]; !skipped(k) {
			named = append(named, k.Value.view.Node.Name)
		}
	}
	if w.i >= len(w.q.queue) {
		return named, 0
	}
	head := &w.q.queue[w.i].Value.view
	more = len(w.q.queue) - w.i
	for _, k := range w.q.members.Pulled() {
		if k.Value.view.queued && skipped(k) && before(&k.Value.view, head) >= 0 {
			more--
		}
	}
	w.i = len(w.q.queue)
	return named, more
}
