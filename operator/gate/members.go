package gate

import (
	"cmp"
	"slices"
	"sync"
)

// members is what the gate keeps of one pool's nodes between reconciles,
// made up to date node by node as poolnodes.Kept.Sync makes their views
// again, so that an event costs the gate the nodes that changed and the
// head of the queue, not the pool. At 5000 nodes, reading and counting
// every node of the pool at every event was most of a reconcile.
//
// A member is quiet when nothing is under way on it that a phase acts on or
// reports node by node: it is ordinary (nodeView.ordinary: Ready,
// schedulable, neither admitted nor settling, its annotations readable,
// nothing degraded, held or opted out, in no other pool, with its pool's
// desired config written), or it is rebooting as approved and nothing else
// (quietlyRebooting). Most nodes of a pool are, whether or not they ask for
// a reboot. The gate counts them (tally) and keeps the ordinary ones that
// ask in the queue's order (queue); the phases read the others, the active
// ones, node by node, and an ordinary node only when its turn comes (the
// plan pulls it: pull).
//
// Nothing here is not in the API: an operator started afresh makes it
// again from its cache, at its first Sync (invariant 5).
type members struct {
	// byName is every node of the pool's value.
	byName map[string]*keptView
	// active holds the members that are not quiet, by name.
	active []*keptView
	// rebooting holds the quiet members that are rebooting, by name.
	rebooting []*keptView
	// tally counts the quiet members.
	tally tally
	// queue holds the ordinary members that ask to be admitted, in the
	// queue's order (before).
	queue []*keptView
	// pass numbers the reconciles: a view pulled in this one has it.
	pass uint64
}

// tally is what the quiet members count for the pool's status and budget:
// how many there are, are Ready, run the config the pool wants, and are
// rebooting, which count against the budget.
type tally struct {
	nodes, ready, current, rebooting int
}

func newMembers() *members { return &members{byName: map[string]*keptView{}} }

// reset forgets every node: Sync makes each again.
func (m *members) reset() {
	clear(m.byName)
	m.active, m.rebooting, m.queue, m.tally = nil, nil, nil, tally{}
}

// set puts a node's new value in place of its last; nil drops it.
func (m *members) set(name string, k *keptView) {
	if old, ok := m.byName[name]; ok {
		m.remove(old)
		delete(m.byName, name)
	}
	if k == nil {
		return
	}
	m.byName[name] = k
	v := &k.view
	if !k.quiet {
		m.active = insertSorted(m.active, k, byName)
		return
	}
	m.tally.add(k, 1)
	if v.Rebooting() {
		m.rebooting = insertSorted(m.rebooting, k, byName)
	}
	if v.queued {
		m.queue = insertSorted(m.queue, k, inQueue)
	}
}

// remove takes a value out of wherever set put it.
func (m *members) remove(k *keptView) {
	v := &k.view
	if !k.quiet {
		m.active = removeSorted(m.active, k, byName)
		return
	}
	m.tally.add(k, -1)
	if v.Rebooting() {
		m.rebooting = removeSorted(m.rebooting, k, byName)
	}
	if v.queued {
		m.queue = removeSorted(m.queue, k, inQueue)
	}
}

func (t *tally) add(k *keptView, n int) {
	t.nodes += n
	if k.view.Ready {
		t.ready += n
	}
	if k.current {
		t.current += n
	}
	if k.view.Rebooting() {
		t.rebooting += n
	}
}

func byName(a, b *keptView) int { return cmp.Compare(a.view.Node.Name, b.view.Node.Name) }

func inQueue(a, b *keptView) int { return before(&a.view, &b.view) }

// insertSorted puts k in its place in s, sorted by order; an insert is a
// copy of the slice's tail, a few microseconds at thousands of nodes.
func insertSorted(s []*keptView, k *keptView, order func(a, b *keptView) int) []*keptView {
	i, _ := slices.BinarySearchFunc(s, k, order)
	return slices.Insert(s, i, k)
}

// removeSorted takes k out of s, sorted by order; s is unchanged when k
// is not in it.
func removeSorted(s []*keptView, k *keptView, order func(a, b *keptView) int) []*keptView {
	i, _ := slices.BinarySearchFunc(s, k, order)
	for ; i < len(s) && order(s[i], k) == 0; i++ {
		if s[i] == k {
			return slices.Delete(s, i, i+1)
		}
	}
	return s
}

// poolMembers holds each pool's members.
type poolMembers struct {
	mu     sync.Mutex
	byPool map[string]*members
}

func newPoolMembers() *poolMembers { return &poolMembers{byPool: map[string]*members{}} }

// of returns the pool's members; a pool's reconciles run one at a time.
func (p *poolMembers) of(pool string) *members {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.byPool[pool]
	if m == nil {
		m = newMembers()
		p.byPool[pool] = m
	}
	return m
}

// forget drops a deleted pool's members.
func (p *poolMembers) forget(pool string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byPool, pool)
}
