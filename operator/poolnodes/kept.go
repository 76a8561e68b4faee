package poolnodes

import (
	"cmp"
	"errors"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/internal/pools"
)

// Kept keeps what a controller made of each node of one pool (the gate's
// view of it, say) between reconciles, and makes it again only for a node
// whose object changed, or that the controller says changed (Changed).
// Reading a pool's nodes afresh at every reconcile made every node's value
// again and sorted every node by name: at 5000 nodes most of what one
// node's event cost the gate, although one node had changed.
//
// A node's object changes with every write: the cache replaces the pointer
// it holds, so the pointer a value was made from says whether it is still
// the node's. What a value depends on besides its node (the pool's spec,
// which pools select what, which requests cannot be read) is the context
// the caller passes to Walk: another context makes every value again. What
// changes with time alone is not kept: the caller works it out at each
// reconcile from the value.
//
// Walk reads every node the cache holds and finds the changed ones by
// their pointers; Sync (sync.go) reads only the nodes the Node watch named,
// for a controller whose work per event must not grow with the pool (the
// gate).
//
// Nothing is kept that the API does not hold: an operator started afresh
// makes every value again from its cache, as Walk did.
//
// A Kept holds the objects its values were made from until the cache
// replaces them (Replaced, from the controller's watch), not until the
// pool's next Walk: a pool walked rarely (the built-in default pool, with
// every node in another) held the version of every node of the cluster
// that its last walk saw, about 10 MB of old Nodes at 5000 nodes during a
// rollout.
type Kept[T any] struct {
	// mu guards what Changed writes, from the watches' goroutines.
	mu    sync.Mutex
	dirty map[string]struct{}
	all   bool
	// stale names the nodes whose object the cache added, replaced or
	// dropped since the last Sync (Added, Replaced): a Sync reads only
	// those, and the ones dirty names.
	stale map[string]struct{}

	// entriesMu guards the rest: a Walk holds it throughout, and Replaced,
	// called from the watches' goroutines, waits for the walk to end (a
	// workqueue hands a pool to one reconcile at a time, so walks do not
	// wait on each other).
	entriesMu sync.Mutex
	context   string
	byName    map[string]*keptNode[T]
	// byObject finds an entry by the object it was made from, without
	// reading the object: at thousands of nodes, reading each node's name
	// to find its entry was most of a walk in which nothing changed.
	byObject map[*corev1.Node]*keptNode[T]
	// order holds byName by name; nil when a node came or went since it
	// was sorted.
	order []*keptNode[T]
	pass  uint64
	// synced is true once a Sync has read every node under context: the
	// next reads only the nodes that changed.
	synced bool
}

type keptNode[T any] struct {
	name string
	// node is the object value was made from; nil when it must be made
	// again.
	node *corev1.Node
	// value is what was made of a node of the pool; nil for a node that is
	// not the pool's, which costs an entry, not a value.
	value *T
	pass  uint64
}

// NewKept returns an empty Kept.
func NewKept[T any]() *Kept[T] {
	return &Kept[T]{byName: map[string]*keptNode[T]{}, byObject: map[*corev1.Node]*keptNode[T]{}, dirty: map[string]struct{}{},
		stale: map[string]struct{}{}}
}

// Changed says that something a node's value depends on changed that its
// object does not show (one of its NodeMaintenances): the next Walk makes
// it again. An empty name makes every node's again.
func (k *Kept[T]) Changed(node string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if node == "" {
		k.all = true
		return
	}
	k.dirty[node] = struct{}{}
}

// Walk calls visit, in name order, with each node of the pool among nodes
// (every Node the cache holds: those pools.Of puts in the pool, a node in
// flight in the pool that admitted it) and what build made of it. build
// runs only for a node whose object changed since its value was made, that
// Changed named since, or when context differs from the last Walk's;
// others names the pools the node is in besides this one. A node build
// fails for is made again at the next Walk; Walk returns the errors.
//
// visit may change the value it is given: the change is kept. Copy what a
// reconcile changes on its own.
func (k *Kept[T]) Walk(d *Decoded, nodes []*corev1.Node, pool string, sel pools.Selection, context string,
	build func(s protocol.NodeState, others []string) (T, error), visit func(v *T)) error {
	k.entriesMu.Lock()
	defer k.entriesMu.Unlock()
	k.takeChanged(context)
	k.pass++
	var errs []error
	for _, node := range nodes {
		if e := k.byObject[node]; e != nil {
			e.pass = k.pass
			continue
		}
		if err := k.make(d, node, pool, sel, build); err != nil {
			errs = append(errs, err)
		}
	}
	if len(k.byName) > len(nodes) {
		for name, e := range k.byName {
			if e.pass != k.pass {
				delete(k.byName, name)
				delete(k.byObject, e.node)
				k.order = nil
			}
		}
	}
	if k.order == nil {
		k.order = make([]*keptNode[T], 0, len(k.byName))
		for _, e := range k.byName {
			k.order = append(k.order, e)
		}
		slices.SortFunc(k.order, func(a, b *keptNode[T]) int { return cmp.Compare(a.name, b.name) })
	}
	d.ForgetGone(nodes)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, e := range k.order {
		if e.value != nil {
			visit(e.value)
		}
	}
	return nil
}

// make makes the node's entry again from node, and its value when the
// node is of the pool; entriesMu is held. A node build fails for keeps no
// value, and is made again at the next Walk or Sync.
func (k *Kept[T]) make(d *Decoded, node *corev1.Node, pool string, sel pools.Selection,
	build func(s protocol.NodeState, others []string) (T, error)) error {
	e := k.byName[node.Name]
	if e == nil {
		e = &keptNode[T]{name: node.Name}
		k.byName[node.Name] = e
		k.order = nil
	}
	e.pass = k.pass
	delete(k.byObject, e.node)
	e.node, e.value = node, nil
	k.byObject[node] = e
	st, in := d.StateAndPools(node, sel)
	if !slices.Contains(in, pool) {
		return nil
	}
	var others []string
	if len(in) > 1 {
		// A copy: the pools found are kept for the next reconcile.
		others = slices.DeleteFunc(slices.Clone(in), func(p string) bool { return p == pool })
	}
	v, err := build(st, others)
	if err != nil {
		delete(k.byObject, node)
		e.node = nil
		return err
	}
	e.value = &v
	return nil
}

// Replaced says that the cache no longer holds old, a node's object: it
// was replaced by a newer version or deleted. The Kept lets go of it; the
// next Walk makes the node's value again from the object the cache holds
// then, as it would have on finding the object changed.
func (k *Kept[T]) Replaced(old *corev1.Node) {
	k.entriesMu.Lock()
	defer k.entriesMu.Unlock()
	if e := k.byObject[old]; e != nil {
		delete(k.byObject, old)
		e.node, e.value = nil, nil
	}
	k.mu.Lock()
	k.stale[old.Name] = struct{}{}
	k.mu.Unlock()
}

// Added says that the cache holds a node it did not: the next Sync reads
// it.
func (k *Kept[T]) Added(node *corev1.Node) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stale[node.Name] = struct{}{}
}

// takeChanged forgets the values of the nodes Changed named, or all of
// them when it named every node or the context is another, and returns
// the nodes Changed named and those whose object changed since it was last
// called; k.entriesMu is held.
//
// The sets it returns are the caller's alone, read without k.mu: an empty
// one is nil, never the Kept's own, which Changed and Added write from the
// watches' goroutines while the caller reads (the race detector caught a
// Sync ranging over the set Changed was adding to).
func (k *Kept[T]) takeChanged(context string) (dirty, stale map[string]struct{}) {
	k.mu.Lock()
	all := k.all
	if len(k.dirty) > 0 {
		dirty, k.dirty = k.dirty, map[string]struct{}{}
	}
	if len(k.stale) > 0 {
		stale, k.stale = k.stale, map[string]struct{}{}
	}
	k.all = false
	k.mu.Unlock()
	if all || context != k.context {
		clear(k.byName)
		clear(k.byObject)
		k.order, k.context, k.synced = nil, context, false
		return dirty, stale
	}
	for name := range dirty {
		if e := k.byName[name]; e != nil {
			delete(k.byObject, e.node)
			e.node, e.value = nil, nil
		}
	}
	return dirty, stale
}

// Added is Kept.Added on every pool's.
func (p *KeptPools[T]) Added(node *corev1.Node) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range p.byPool {
		k.Added(node)
	}
}

// KeptPools holds a Kept per pool.
type KeptPools[T any] struct {
	mu     sync.Mutex
	byPool map[string]*Kept[T]
}

// NewKeptPools returns an empty KeptPools.
func NewKeptPools[T any]() *KeptPools[T] {
	return &KeptPools[T]{byPool: map[string]*Kept[T]{}}
}

// Of returns the pool's Kept, made empty when there is none yet.
func (p *KeptPools[T]) Of(pool string) *Kept[T] {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := p.byPool[pool]
	if k == nil {
		k = NewKept[T]()
		p.byPool[pool] = k
	}
	return k
}

// Changed is Kept.Changed on every pool's: a node may be in any.
func (p *KeptPools[T]) Changed(node string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range p.byPool {
		k.Changed(node)
	}
}

// Replaced is Kept.Replaced on every pool's: every pool's Kept holds an
// entry for every node.
func (p *KeptPools[T]) Replaced(old *corev1.Node) {
	// Not under p.mu: a pool's Kept waits for its walk to end, and the
	// reconciles of other pools would wait with it for theirs (Of).
	p.mu.Lock()
	kepts := slices.Collect(maps.Values(p.byPool))
	p.mu.Unlock()
	for _, k := range kepts {
		k.Replaced(old)
	}
}

// Forget drops a pool's Kept: the pool is gone.
func (p *KeptPools[T]) Forget(pool string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byPool, pool)
}
