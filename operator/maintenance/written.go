package maintenance

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// writtenTTL bounds how long a write is kept for a cache that never shows
// it (the object was deleted meanwhile).
const writtenTTL = time.Minute

// written keeps the NodeMaintenances this controller created or wrote, as
// the API server returned them, until its cache shows them. A node's
// reconciles follow each other faster than the cache learns of the last
// write: read from the cache alone, a reconcile would patch a stale copy
// (refused by the optimistic lock: a wasted request, and a retry with
// backoff) and would not count a record it just created.
type written struct {
	mu     sync.Mutex
	byName map[string]writtenCopy
}

type writtenCopy struct {
	nm *v1alpha1.NodeMaintenance
	at time.Time
}

func newWritten() *written { return &written{byName: map[string]writtenCopy{}} }

// remember keeps a copy of nm as the API server returned it.
func (w *written) remember(nm *v1alpha1.NodeMaintenance, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.byName[nm.Name] = writtenCopy{nm: nm.DeepCopy(), at: now}
}

// forget drops what was kept of the named object, e.g. once it is gone.
func (w *written) forget(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.byName, name)
}

// overlay returns the node's NodeMaintenances as the cache shows them,
// with the copies this controller wrote in place of older cached ones,
// and those it created that the cache does not show yet. Copies the cache
// has caught up with are forgotten.
func (w *written) overlay(node string, cached []v1alpha1.NodeMaintenance, now time.Time) []v1alpha1.NodeMaintenance {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.byName) == 0 {
		return cached
	}
	inCache := make(map[string]bool, len(cached))
	for i := range cached {
		name := cached[i].Name
		inCache[name] = true
		c, ok := w.byName[name]
		if !ok {
			continue
		}
		if c.nm.UID != cached[i].UID || newer(cached[i].ResourceVersion, c.nm.ResourceVersion) {
			delete(w.byName, name)
			continue
		}
		cached[i] = *c.nm.DeepCopy()
	}
	for name, c := range w.byName {
		switch {
		case now.Sub(c.at) > writtenTTL:
			delete(w.byName, name)
		case !inCache[name] && c.nm.Spec.NodeName == node:
			cached = append(cached, *c.nm.DeepCopy())
		}
	}
	return cached
}

// newer reports whether the cached resourceVersion is at or past the
// written one; one that cannot be compared counts as newer, so that the
// cache is trusted when in doubt.
func newer(cached, written string) bool {
	c, err := resourceversion.CompareResourceVersion(cached, written)
	return err != nil || c >= 0
}
