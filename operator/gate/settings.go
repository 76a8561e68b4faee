package gate

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/operator/cacheread"
	"github.com/kmaint/kmaint/operator/gate/view"
	"github.com/kmaint/kmaint/operator/poolnodes"
)

// requestSettings keeps, per node, what its open NodeMaintenances say of
// its requests (pools.Settings). Every waiting node's settings are asked
// for at every reconcile of its pool, and most have not changed since the
// last: they are kept while the node's requests are the same (the same
// decoded record: poolnodes.Decoded keeps one per version of the node) and
// none of its NodeMaintenances changed since they were found (changed,
// which the gate's watch of NodeMaintenances calls). A find that raced a
// change is not kept: each node counts its changes, and what was found
// before the last one is found again.
type requestSettings struct {
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

func newRequestSettings() *requestSettings {
	return &requestSettings{byNode: map[string]nodeSettings{}}
}

// changed says that one of the node's NodeMaintenances changed; an empty
// node, one whose node cannot be told (it cannot be read), forgets every
// node's.
func (s *requestSettings) changed(node string) {
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

// of returns the node's settings by request id for its requests (the
// node's decoded record): those kept, or found with find.
func (s *requestSettings) of(node string, requested *protocol.Requested, find func() ([]*v1alpha1.NodeMaintenance, error)) (pools.SettingsList, error) {
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

// forget drops the settings of a node the cache no longer holds.
func (s *requestSettings) forget(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byNode, node)
}

// forgetGone drops the settings of nodes not among nodes, every node the
// cache holds, once more are kept than that: nodes deleted with requests
// open.
func (s *requestSettings) forgetGone(nodes []*corev1.Node) {
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

// requestSettingsOf returns, by request id, what the node's open
// NodeMaintenances (found by open) say of its requests: their windows,
// freezes and policy, and when each was made, which bounds the node's
// place in the queue.
func (r *Reconciler) requestSettingsOf(open cacheread.Index[*v1alpha1.NodeMaintenance], v *view.Node) (pools.SettingsList, error) {
	return r.settings.of(v.Node.Name, v.Requested, func() ([]*v1alpha1.NodeMaintenance, error) {
		nms, err := open.By(v.Node.Name)
		if err != nil {
			return nil, fmt.Errorf("list the open maintenances of node %s: %w", v.Node.Name, err)
		}
		return nms, nil
	})
}
