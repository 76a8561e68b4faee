package plan

import (
	"cmp"
	"slices"

	"github.com/kmaint/kmaint/operator/gate/members"
	"github.com/kmaint/kmaint/operator/gate/view"
)

// The queue: a pool's waiting nodes in the order they asked. Its ordinary
// members (package members) are kept in that order between reconciles, each put in
// its place when its view is made again; the other waiting nodes, few, are
// sorted at each plan (some of them move with the time: QueueMoves), and
// both are read together, head first (waitOrder). Sorting every waiting
// node at every reconcile was, at the start of a rollout of thousands of
// nodes, the plan's own cost; reading every one of them, a tenth of a
// reconcile at 5000 nodes in which 250 could be admitted at most.

// Before is the queue's order: when the nodes asked (view.Node.RequestTime),
// then their names.
func Before(a, b *view.Node) int {
	if c := a.RequestTime().Compare(b.RequestTime()); c != 0 {
		return c
	}
	return cmp.Compare(a.Node.Name, b.Node.Name)
}

// KeptOrder is how a pool's members sort the kept views: the queue in
// Before's order.
func KeptOrder() members.Order[view.Kept] {
	return members.Order[view.Kept]{
		Name:  func(k *view.Kept) string { return k.View.Node.Name },
		Queue: func(a, b *view.Kept) int { return Before(&a.View, &b.View) },
	}
}

// member is what the gate keeps of a node of a pool between reconciles.
type member = members.Member[view.Kept]

// Queue is the ordinary members that ask to be admitted, in the queue's
// order (members.Pool.Queue), as one plan reads them.
type Queue struct {
	// members is the reconcile's pass over the pool's members: the plan
	// pulls each member it reads through it, once.
	members *members.Pass[view.Kept]
	queue   []*member
	// counted is true when the plan may count the ordinary members past
	// the budget instead of reading them.
	counted bool
}

// NewQueue is the queue of the ordinary members of pass as one plan reads
// them (members.Pass.Queue). counted is true when the plan may count the
// ordinary members past the budget instead of reading them: no window or
// freeze applies in the pool, so each costs one slot and nothing of the
// time holds it.
func NewQueue(pass *members.Pass[view.Kept], counted bool) *Queue {
	return &Queue{members: pass, queue: pass.Queue(), counted: counted}
}

// waitOrder reads the waiting nodes head first: the ordinary members of q
// merged with others, sorted. It returns nil at the end; ordinary says
// which list a view came from. A nil q has no ordinary members.
type waitOrder struct {
	q      *Queue
	others []*view.Node
	i, j   int
}

// newWaitOrder orders the waiting nodes among views that q does not hold,
// to be read with q's.
func newWaitOrder(views []*view.Node, q *Queue) *waitOrder {
	var others []*view.Node
	for _, v := range views {
		if v.Waiting() && (q == nil || !v.Queued) {
			others = append(others, v)
		}
	}
	slices.SortFunc(others, Before)
	return &waitOrder{q: q, others: others}
}

// next returns the next waiting node; nil at the end.
func (w *waitOrder) next() (v *view.Node, ordinary bool) {
	for {
		var o *view.Node
		if w.q != nil && w.i < len(w.q.queue) {
			o = &w.q.queue[w.i].Value.View
		}
		if w.j < len(w.others) && (o == nil || Before(w.others[w.j], o) < 0) {
			w.j++
			return w.others[w.j-1], false
		}
		if o == nil {
			return nil, false
		}
		k := w.q.queue[w.i]
		w.q.members.Pull(k)
		v := &k.Value.View
		w.i++
		if v.Waiting() {
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
	skipped := func(k *member) bool { return w.q.members.HasPulled(k) && !k.Value.View.Waiting() }
	for ; w.i < len(w.q.queue) && len(named) < n; w.i++ {
		if k := w.q.queue[w.i]; !skipped(k) {
			named = append(named, k.Value.View.Node.Name)
		}
	}
	if w.i >= len(w.q.queue) {
		return named, 0
	}
	head := &w.q.queue[w.i].Value.View
	more = len(w.q.queue) - w.i
	for _, k := range w.q.members.Pulled() {
		if k.Value.View.Queued && skipped(k) && Before(&k.Value.View, head) >= 0 {
			more--
		}
	}
	w.i = len(w.q.queue)
	return named, more
}

// WaitingHead names the first n waiting nodes in the queue's order, and
// counts them all, without making the ordinary members' views ready: the
// pool-wide holds hold every one of them alike. q is the pool's queue, nil
// for views alone.
func WaitingHead(views []*view.Node, q *Queue, n int) (names []string, count int) {
	order := newWaitOrder(views, q)
	count = len(order.others)
	var queue []*member
	if q != nil {
		queue = q.queue
		count += len(queue)
		for _, k := range q.members.Pulled() {
			if v := &k.Value.View; v.Queued && !v.Waiting() {
				count--
			}
		}
	}
	i, j := 0, 0
	for len(names) < n && (i < len(queue) || j < len(order.others)) {
		if i < len(queue) && (j == len(order.others) || Before(&queue[i].Value.View, order.others[j]) < 0) {
			if k := queue[i]; !q.members.HasPulled(k) || k.Value.View.Waiting() {
				names = append(names, k.Value.View.Node.Name)
			}
			i++
			continue
		}
		names = append(names, order.others[j].Node.Name)
		j++
	}
	return names, count
}
