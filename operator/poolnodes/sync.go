package poolnodes

import (
	"errors"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/internal/pools"
)

// Sync is what Kept.Sync reads the pool's nodes with, and whom it tells of
// what it made.
type Sync[T any] struct {
	// Decoded decodes each version of a node once.
	Decoded *Decoded
	// List returns every Node the cache holds; Get the one of a name, nil
	// when the cache holds none. Both return the cache's pointers.
	List func() ([]*corev1.Node, error)
	Get  func(name string) (*corev1.Node, error)
	// Pool, Selection and Context are Walk's.
	Pool      string
	Selection pools.Selection
	Context   string
	// Build makes a node's value, as Walk's build.
	Build func(s protocol.NodeState, others []string) (T, error)
	// Reset says that every node's value is made again: whatever the
	// caller made of the values Set gave it before is void.
	Reset func()
	// Set gives the caller a node's new value; v is nil when the node is no
	// longer of the pool, or no longer in the cache.
	Set func(name string, v *T)
	// Gone names a node the cache no longer holds.
	Gone func(name string)
}

// Sync brings what the Kept holds of the pool up to date with the cache, as
// Walk does, without reading every node: once a Sync has read them all, the
// next reads only the nodes the watch said changed (Added, Replaced) or
// Changed named, and tells s.Set of each new value. A pool's event then
// costs the gate the nodes that changed, not the pool: at 5000 nodes,
// finding the one node of an event among all of them by its pointer was,
// with the visit of every node that followed, most of a reconcile.
//
// What the caller makes of the values (counts, a queue) is kept up to date
// by s.Set; a Sync that reads every node again (the first, and after the
// context changed or Changed named every node) calls s.Reset first. Nodes
// build fails for are read again at the next Sync, which returns the
// errors. The watch must tell the Kept of a change before the reconcile the
// change causes runs (TrackNodes), or that reconcile misses it.
func (k *Kept[T]) Sync(s Sync[T]) error {
	k.entriesMu.Lock()
	defer k.entriesMu.Unlock()
	dirty, stale := k.takeChanged(s.Context)
	k.pass++
	if !k.synced {
		return k.syncAll(s)
	}
	var failed []string
	var errs []error
	read := func(name string, force bool) {
		node, err := s.Get(name)
		if err != nil {
			failed, errs = append(failed, name), append(errs, err)
			return
		}
		e := k.byName[name]
		if node == nil {
			if e != nil {
				delete(k.byName, name)
				delete(k.byObject, e.node)
				k.order = nil
				s.Set(name, nil)
			}
			s.Decoded.Forget(name)
			if s.Gone != nil {
				s.Gone(name)
			}
			return
		}
		if e != nil && e.node == node && !force {
			return
		}
		if err := k.make(s.Decoded, node, s.Pool, s.Selection, s.Build); err != nil {
			failed, errs = append(failed, name), append(errs, err)
		}
		e = k.byName[name]
		s.Set(name, e.value)
	}
	for name := range dirty {
		read(name, true)
	}
	for name := range stale {
		if _, done := dirty[name]; !done {
			read(name, false)
		}
	}
	k.retry(failed)
	return errors.Join(errs...)
}

// syncAll is Sync reading every node; entriesMu is held.
func (k *Kept[T]) syncAll(s Sync[T]) error {
	nodes, err := s.List()
	if err != nil {
		// Nothing was read: the next Sync reads every node.
		return err
	}
	s.Reset()
	clear(k.byName)
	clear(k.byObject)
	k.order = nil
	var failed []string
	var errs []error
	for _, node := range nodes {
		if err := k.make(s.Decoded, node, s.Pool, s.Selection, s.Build); err != nil {
			failed, errs = append(failed, node.Name), append(errs, err)
			continue
		}
		if e := k.byName[node.Name]; e.value != nil {
			s.Set(node.Name, e.value)
		}
	}
	s.Decoded.ForgetGone(nodes)
	k.synced = true
	k.retry(failed)
	return errors.Join(errs...)
}

// retry has the next Sync read the named nodes again.
func (k *Kept[T]) retry(names []string) {
	if len(names) == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, name := range names {
		k.stale[name] = struct{}{}
	}
}
