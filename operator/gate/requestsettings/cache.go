package requestsettings

import (
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/operator/poolnodes"
)

// Cache keeps each node's settings while the node's requests are the same
// (the same decoded record: poolnodes.Decoded keeps one per version of the
// node) and none of its NodeMaintenances changed since they were found
// (Changed, which the gate's watch of NodeMaintenances calls). A find that
// raced a change is not kept: each node counts its changes, and what was
// found before the last one is found again. It is safe for concurrent use.
type Cache struct {
	mu     sync.Mutex
	byNode map[string]nodeSettings
}

type nodeSettings struct {
	// changes counts the changes of the node's NodeMaintenances seen.
	changes uint64
	// found is what was found, at changes; nil when nothing was.
	found *foundSettings
}

type foundSettings struct {
	changes   uint64
	requested *protocol.Requested
	open      []*v1alpha1.NodeMaintenance
	settings  pools.SettingsList
}

// New returns an empty Cache.
func New() *Cache {
	return &Cache{byNode: map[string]nodeSettings{}}
}

// Changed says that one of the node's NodeMaintenances changed; an empty
// node, one whose node cannot be told (it cannot be read), forgets every
// node's.
func (s *Cache) Changed(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if node == "" {
		for name, n := range s.byNode {
			s.byNode[name] = nodeSettings{changes: n.changes + 1}
		}
		return
	}
	n := s.byNode[node]
	s.byNode[node] = nodeSettings{changes: n.changes + 1}
}

// Of returns the node's settings by request id for its requests (the
// node's decoded record): those kept, or found with find, which returns
// the node's open NodeMaintenances.
func (s *Cache) Of(node string, requested *protocol.Requested, find func() ([]*v1alpha1.NodeMaintenance, error)) (pools.SettingsList, error) {
	s.mu.Lock()
	n := s.byNode[node]
	s.mu.Unlock()
	if f := n.found; f != nil && f.changes == n.changes && f.requested == requested {
		return f.settings, nil
	}
	open, err := find()
	if err != nil {
		return nil, err
	}
	found := &foundSettings{changes: n.changes, requested: requested, open: open}
	if f := n.found; f != nil && sameObjects(f.open, open) {
		// The node changed and its NodeMaintenances did not.
		found.settings = f.settings
	} else {
		found.settings = pools.NodeSettings(open)
	}
	s.mu.Lock()
	if now := s.byNode[node]; now.changes == found.changes {
		s.byNode[node] = nodeSettings{changes: now.changes, found: found}
	}
	s.mu.Unlock()
	return found.settings, nil
}

// Forget drops the settings of a node the cache no longer holds.
func (s *Cache) Forget(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byNode, node)
}

// ForgetGone drops the settings of nodes not among nodes, every node the
// cache holds, once more are kept than that: nodes deleted with requests
// open.
func (s *Cache) ForgetGone(nodes []*corev1.Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	poolnodes.ForgetGone(s.byNode, nodes)
}

// sameObjects reports whether a and b hold the same pointers, in any
// order (an index hands them out in no order).
func sameObjects(a, b []*v1alpha1.NodeMaintenance) bool {
	if len(a) != len(b) {
		return false
	}
next:
	for _, x := range a {
		for _, y := range b {
			if x == y {
				continue next
			}
		}
		return false
	}
	return true
}
