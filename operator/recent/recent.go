package recent

import (
	"sync"
	"time"
)

// Stamped is a value that knows when it was made.
type Stamped interface{ MadeAt() time.Time }

// Cache keeps the last value made per key. Putting a value forgets those
// made long before it: their keys (pools deleted, nodes gone or admitted)
// are most likely not asked for again, and the map must not grow with
// every key ever seen. It is safe for concurrent use.
type Cache[K comparable, V Stamped] struct {
	mu     sync.Mutex
	values map[K]V
}

// New returns an empty cache.
func New[K comparable, V Stamped]() *Cache[K, V] {
	return &Cache[K, V]{values: map[K]V{}}
}

// Get returns the value kept for k.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.values[k]
	return v, ok
}

// Put stores v under k and forgets values made more than stale before it.
func (c *Cache[K, V]) Put(k K, v V, stale time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for old, was := range c.values {
		if v.MadeAt().Sub(was.MadeAt()) > stale {
			delete(c.values, old)
		}
	}
	c.values[k] = v
}
