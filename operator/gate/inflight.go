package gate

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// inflight remembers admissions the gate wrote that its cache may not show
// yet. Without it a reconcile that runs right after an admission would see
// the node as available and could admit one node too many.
type inflight struct {
	mu sync.Mutex
	// written maps a node name to the resourceVersion of the admission write.
	written map[string]string
	// since maps a node name to when the write was made, so that an entry
	// whose resourceVersion cannot be compared still expires.
	since map[string]time.Time
}

// inflightTTL bounds how long an entry can outlive a cache that never shows it.
const inflightTTL = time.Minute

func newInflight() *inflight {
	return &inflight{written: map[string]string{}, since: map[string]time.Time{}}
}

func (f *inflight) add(node, resourceVersion string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.written[node] = resourceVersion
	f.since[node] = now
}

// any reports whether some admission is remembered: when none is, no
// node is pending.
func (f *inflight) any() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.written) > 0
}

// names returns the nodes whose admissions are remembered.
func (f *inflight) names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	names := make([]string, 0, len(f.written))
	for name := range f.written {
		names = append(names, name)
	}
	return names
}

// pending reports whether the cache's copy of the node (at cachedVersion)
// predates the admission written for it. Entries the cache has caught up with
// are forgotten.
func (f *inflight) pending(node, cachedVersion string, admitted bool, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	written, ok := f.written[node]
	if !ok {
		return false
	}
	if admitted || now.Sub(f.since[node]) > inflightTTL {
		f.forget(node)
		return false
	}
	c, err := resourceversion.CompareResourceVersion(cachedVersion, written)
	if err == nil && c >= 0 {
		f.forget(node)
		return false
	}
	return true
}

func (f *inflight) forget(node string) {
	delete(f.written, node)
	delete(f.since, node)
}
