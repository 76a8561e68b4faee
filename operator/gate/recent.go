package gate

import (
	"sync"
	"time"
)

// stamped is a value that knows when it was made.
type stamped interface{ madeAt() time.Time }

// recent keeps the last value made per key (a pool's blocking-query
// evaluation, a node's pod check), so that work asked for on every
// reconcile runs at most once per interval. Putting a value forgets those
// made long before it: their keys (pools deleted, nodes gone or admitted)
// are most likely not asked for again, and the map must not grow with
// every key ever seen.
type recent[K comparable, V stamped] struct {
	mu     sync.Mutex
	values map[K]V
}

func newRecent[K comparable, V stamped]() *recent[K, V] {
	return &recent[K, V]{values: map[K]V{}}
}

func (c *recent[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.values[k]
	return v, ok
}

// put stores v under k and forgets values made more than stale before it.
func (c *recent[K, V]) put(k K, v V, stale time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for old, was := range c.values {
		if v.madeAt().Sub(was.madeAt()) > stale {
			delete(c.values, old)
		}
	}
	c.values[k] = v
}
