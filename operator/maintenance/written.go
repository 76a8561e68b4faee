package maintenance

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// writtenTTL bounds how long a write is kept for a cache that never shows
// it (the object was deleted meanwhile and the watch did not say so).
const writtenTTL = time.Minute

// written keeps the NodeMaintenances this controller created or wrote, as
// the API server returned them, until its cache shows them. A node's
// reconciles follow each other faster than the cache learns of the last
// write: read from the cache alone, a reconcile would patch a stale copy
// (refused by the optimistic lock: a wasted request, and a retry with
// backoff) and would not count a record it just created.
//
// A copy is dropped the moment the cache shows its write (seen, from the
// controller's watch), not at the node's next reconcile: in a rollout of
// thousands of nodes every waiting record is written, and copies kept
// until their nodes came round again held a second copy of most of them
// (about 2.5 KB each). Copies are kept by node, so that a reconcile reads
// its node's alone.
type written struct {
	mu     sync.Mutex
	byNode map[string]map[string]writtenCopy
	// count is the copies kept; swept is when the last sweep of copies
	// past writtenTTL ran.
	count int
	swept time.Time
}

type writtenCopy struct {
	nm *v1alpha1.NodeMaintenance
	at time.Time
}

func newWritten() *written { return &written{byNode: map[string]map[string]writtenCopy{}} }

// remember keeps a copy of nm as the API server returned it.
func (w *written) remember(nm *v1alpha1.NodeMaintenance, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sweep(now)
	node := w.byNode[nm.Spec.NodeName]
	if node == nil {
		node = map[string]writtenCopy{}
		w.byNode[nm.Spec.NodeName] = node
	}
	if _, ok := node[nm.Name]; !ok {
		w.count++
	}
	node[nm.Name] = writtenCopy{nm: nm.DeepCopy(), at: now}
}

// forget drops what was kept of the named object of the node, e.g. once
// it is gone.
func (w *written) forget(node, name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drop(node, name)
}

// seen drops the copy of nm once the cache holds nm at or past it, or holds
// another object of its name.
func (w *written) seen(nm *v1alpha1.NodeMaintenance) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.byNode[nm.Spec.NodeName][nm.Name]
	if ok && (c.nm.UID != nm.UID || newer(nm.ResourceVersion, c.nm.ResourceVersion)) {
		w.drop(nm.Spec.NodeName, nm.Name)
	}
}

// overlay returns the node's NodeMaintenances as the cache shows them,
// with the copies this controller wrote in place of older cached ones,
// and those it created that the cache does not show yet. Copies the cache
// has caught up with are forgotten.
func (w *written) overlay(node string, cached []v1alpha1.NodeMaintenance, now time.Time) []v1alpha1.NodeMaintenance {
	w.mu.Lock()
	defer w.mu.Unlock()
	copies := w.byNode[node]
	if len(copies) == 0 {
		return cached
	}
	inCache := make(map[string]bool, len(cached))
	for i := range cached {
		name := cached[i].Name
		inCache[name] = true
		c, ok := copies[name]
		if !ok {
			continue
		}
		if c.nm.UID != cached[i].UID || newer(cached[i].ResourceVersion, c.nm.ResourceVersion) {
			w.drop(node, name)
			continue
		}
		cached[i] = *c.nm.DeepCopy()
	}
	for name, c := range copies {
		switch {
		case now.Sub(c.at) > writtenTTL:
			w.drop(node, name)
		case !inCache[name]:
			cached = append(cached, *c.nm.DeepCopy())
		}
	}
	return cached
}

// drop forgets a copy; w.mu is held.
func (w *written) drop(node, name string) {
	copies := w.byNode[node]
	if _, ok := copies[name]; !ok {
		return
	}
	delete(copies, name)
	w.count--
	if len(copies) == 0 {
		delete(w.byNode, node)
	}
}

// sweep drops the copies past writtenTTL, once a TTL at most, so that a
// copy whose node is never reconciled again, and whose object the cache
// never shows, does not stay; w.mu is held.
func (w *written) sweep(now time.Time) {
	if w.count == 0 || now.Sub(w.swept) < writtenTTL {
		return
	}
	w.swept = now
	for node, copies := range w.byNode {
		for name, c := range copies {
			if now.Sub(c.at) > writtenTTL {
				w.drop(node, name)
			}
		}
	}
}

// kept is how many copies are kept, for tests.
func (w *written) kept() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count
}

// newer reports whether the cached resourceVersion is at or past the
// written one; one that cannot be compared counts as newer, so that the
// cache is trusted when in doubt.
func newer(cached, written string) bool {
	c, err := resourceversion.CompareResourceVersion(cached, written)
	return err != nil || c >= 0
}
