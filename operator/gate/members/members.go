package members

import (
	"cmp"
	"slices"
	"sync"
)

// Place says where a member goes among its pool's members, as the caller
// found it when it made the member's value. Only Quiet is read of an
// active member.
type Place struct {
	// Quiet is true when nothing is under way on the node that a phase
	// acts on or reports node by node: it is counted, not read, until its
	// turn comes. Otherwise the member is active.
	Quiet bool
	// Rebooting is true for a member rebooting as approved: it counts
	// against the pool's budget.
	Rebooting bool
	// Queued is true for a member that asks to be admitted: it is in the
	// queue.
	Queued bool
	// Ready and Current (it runs the config its pool wants) are what the
	// tally counts besides.
	Ready, Current bool
}

// Member is what the gate keeps of one node of a pool: its value, and
// where it goes. The caller makes it (poolnodes.Kept holds it); Set puts
// it in its place.
type Member[V any] struct {
	Value V
	Place Place
	// pass is the last pass that pulled the member (Pass.Pull).
	pass uint64
}

// Tally is what the quiet members count for the pool's status and budget:
// how many there are, are Ready, run the config the pool wants, and are
// rebooting, which count against the budget.
type Tally struct {
	Nodes, Ready, Current, Rebooting int
}

// add counts p n times: 1 for a member put in, -1 for one taken out.
func (t *Tally) add(p Place, n int) {
	t.Nodes += n
	if p.Ready {
		t.Ready += n
	}
	if p.Current {
		t.Current += n
	}
	if p.Rebooting {
		t.Rebooting += n
	}
}

// Pool is what the gate keeps of one pool's nodes between reconciles, made
// up to date node by node as their values are made again, so that an
// event costs the nodes that changed, not the pool. At 5000 nodes,
// reading and counting every node of the pool at every event was most of
// a reconcile.
//
// Nothing here is not in the API: an operator started afresh makes it
// again from its cache, at its first Sync (invariant 5).
type Pool[V any] struct {
	// byName is every member, by node name.
	byName map[string]*Member[V]
	// active holds the members that are not quiet, by name.
	active []*Member[V]
	// rebooting holds the quiet members that are rebooting, by name.
	rebooting []*Member[V]
	// tally counts the quiet members.
	tally Tally
	// queue holds the quiet members that ask to be admitted, in the
	// queue's order.
	queue []*Member[V]
	order Order[V]
	// pass numbers the reconciles' passes (Start).
	pass uint64
}

// Order says how a Pool sorts its members' values.
type Order[V any] struct {
	// Name is the node's name, which Set is given: the active and the
	// rebooting members are kept by name. A Member does not keep it
	// itself: at thousands of nodes, its 16 bytes took each member
	// past the size it is allocated in, 64 bytes more a node.
	Name func(*V) string
	// Queue is the queue's order, a total one (ties broken by the node's
	// name, say).
	Queue func(a, b *V) int
}

// NewPool returns an empty Pool sorted by order.
func NewPool[V any](order Order[V]) *Pool[V] {
	return &Pool[V]{byName: map[string]*Member[V]{}, order: order}
}

// Reset forgets every member: each is Set again.
func (p *Pool[V]) Reset() {
	clear(p.byName)
	p.active, p.rebooting, p.queue, p.tally = nil, nil, nil, Tally{}
}

// Set puts a node's new member in place of its last; nil drops it. A
// member is Set once: its Place must not change while the pool holds it,
// since it is what takes it out again.
func (p *Pool[V]) Set(name string, m *Member[V]) {
	if old, ok := p.byName[name]; ok {
		p.remove(old)
		delete(p.byName, name)
	}
	if m == nil {
		return
	}
	p.byName[name] = m
	if !m.Place.Quiet {
		p.active = insertSorted(p.active, m, p.inNameOrder)
		return
	}
	p.tally.add(m.Place, 1)
	if m.Place.Rebooting {
		p.rebooting = insertSorted(p.rebooting, m, p.inNameOrder)
	}
	if m.Place.Queued {
		p.queue = insertSorted(p.queue, m, p.inQueueOrder)
	}
}

// remove takes a member out of wherever Set put it.
func (p *Pool[V]) remove(m *Member[V]) {
	if !m.Place.Quiet {
		p.active = removeSorted(p.active, m, p.inNameOrder)
		return
	}
	p.tally.add(m.Place, -1)
	if m.Place.Rebooting {
		p.rebooting = removeSorted(p.rebooting, m, p.inNameOrder)
	}
	if m.Place.Queued {
		p.queue = removeSorted(p.queue, m, p.inQueueOrder)
	}
}

// Get returns the named node's member; nil when the pool has none.
func (p *Pool[V]) Get(name string) *Member[V] { return p.byName[name] }

// Active returns the members that are not quiet, by name. The slice is the
// pool's: read it, and only until the next Set.
func (p *Pool[V]) Active() []*Member[V] { return p.active }

// Rebooting returns the quiet members that are rebooting, by name, as
// Active does.
func (p *Pool[V]) Rebooting() []*Member[V] { return p.rebooting }

// Queue returns the quiet members that ask to be admitted, in the queue's
// order, as Active does.
func (p *Pool[V]) Queue() []*Member[V] { return p.queue }

// Tally counts the quiet members.
func (p *Pool[V]) Tally() Tally { return p.tally }

func (p *Pool[V]) inNameOrder(a, b *Member[V]) int {
	return cmp.Compare(p.order.Name(&a.Value), p.order.Name(&b.Value))
}

func (p *Pool[V]) inQueueOrder(a, b *Member[V]) int { return p.order.Queue(&a.Value, &b.Value) }

// insertSorted puts m in its place in s, sorted by order; an insert is a
// copy of the slice's tail, a few microseconds at thousands of nodes.
func insertSorted[V any](s []*Member[V], m *Member[V], order func(a, b *Member[V]) int) []*Member[V] {
	i, _ := slices.BinarySearchFunc(s, m, order)
	return slices.Insert(s, i, m)
}

// removeSorted takes m out of s, sorted by order; s is unchanged when m
// is not in it.
func removeSorted[V any](s []*Member[V], m *Member[V], order func(a, b *Member[V]) int) []*Member[V] {
	i, _ := slices.BinarySearchFunc(s, m, order)
	for ; i < len(s) && order(s[i], m) == 0; i++ {
		if s[i] == m {
			return slices.Delete(s, i, i+1)
		}
	}
	return s
}

// Pools holds each pool's members.
type Pools[V any] struct {
	mu     sync.Mutex
	byPool map[string]*Pool[V]
	order  Order[V]
}

// NewPools returns an empty Pools, whose pools are sorted by order.
func NewPools[V any](order Order[V]) *Pools[V] {
	return &Pools[V]{byPool: map[string]*Pool[V]{}, order: order}
}

// Of returns the pool's members, empty at first; a pool's reconciles run
// one at a time, and only they use what it returns.
func (p *Pools[V]) Of(pool string) *Pool[V] {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.byPool[pool]
	if m == nil {
		m = NewPool(p.order)
		p.byPool[pool] = m
	}
	return m
}

// Forget drops a deleted pool's members.
func (p *Pools[V]) Forget(pool string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byPool, pool)
}
