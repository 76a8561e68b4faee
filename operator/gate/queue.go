package gate

import (
	"cmp"
	"slices"
	"sync"
)

// queue keeps the order a pool's waiting nodes were planned in, for the
// next plan. Sorting every waiting node at every reconcile was, at the
// start of a rollout of thousands of nodes, the plan's own cost, although
// between two reconciles only the nodes whose object changed move: a
// view is kept between reconciles (poolnodes.Kept), and so is its place.
// Only the new views (made again, or written in this reconcile) and those
// whose place depends on the time (nodeView.queueMoves) are sorted; the
// others keep their order, and both are merged.
type queue struct {
	// last is the order of the last plan.
	last []*nodeView
	// mark is the last plan's; a view marked mark waits, one marked
	// mark+1 has been placed.
	mark uint64
}

// before is the queue's order: when the nodes asked (nodeView.requestTime),
// then their names.
func before(a, b *nodeView) int {
	if c := a.requestTime().Compare(b.requestTime()); c != 0 {
		return c
	}
	return cmp.Compare(a.Node.Name, b.Node.Name)
}

// order returns the waiting nodes among views in the queue's order, and
// keeps it for the next. A nil queue sorts them all.
func (q *queue) order(views []*nodeView) []*nodeView {
	if q == nil {
		var waiting []*nodeView
		for _, v := range views {
			if v.waiting() {
				waiting = append(waiting, v)
			}
		}
		slices.SortFunc(waiting, before)
		return waiting
	}
	q.mark += 2
	waits, placed := q.mark, q.mark+1
	n := 0
	for _, v := range views {
		if v.waiting() {
			v.queueMark = waits
			n++
		}
	}
	kept := make([]*nodeView, 0, n)
	for _, v := range q.last {
		if v.queueMark == waits && !v.queueMoves {
			kept = append(kept, v)
			v.queueMark = placed
		}
	}
	var fresh []*nodeView
	for _, v := range views {
		if v.queueMark == waits {
			fresh = append(fresh, v)
		}
	}
	slices.SortFunc(fresh, before)
	q.last = merge(kept, fresh)
	return q.last
}

// merge merges two lists in the queue's order.
func merge(a, b []*nodeView) []*nodeView {
	if len(b) == 0 {
		return a
	}
	out := make([]*nodeView, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if before(b[0], a[0]) < 0 {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	return append(append(out, a...), b...)
}

// queues holds each pool's queue.
type queues struct {
	mu     sync.Mutex
	byPool map[string]*queue
}

func newQueues() *queues { return &queues{byPool: map[string]*queue{}} }

// of returns the pool's queue; a pool's reconciles run one at a time.
func (qs *queues) of(pool string) *queue {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	q := qs.byPool[pool]
	if q == nil {
		q = &queue{}
		qs.byPool[pool] = q
	}
	return q
}

// forget drops a deleted pool's queue.
func (qs *queues) forget(pool string) {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	delete(qs.byPool, pool)
}
