package gate

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/operator/cacheread"
	"github.com/kmaint/kmaint/operator/poolnodes"
)

// requestSettings keeps, per node, what its open NodeMaintenances say of
// its requests (pools.Settings), as long as they are the same objects. The
// cache replaces an object it learns a change of, and never changes one it
// holds, so the same pointers are the same NodeMaintenances as they were.
// Every waiting node's settings are asked for at every reconcile of its
// pool, and most of them have not changed since the last.
type requestSettings struct {
	mu     sync.Mutex
	byNode map[string]nodeSettings
}

type nodeSettings struct {
	open     []*v1alpha1.NodeMaintenance
	settings map[string]pools.RequestSettings
}

func newRequestSettings() *requestSettings {
	return &requestSettings{byNode: map[string]nodeSettings{}}
}

// of returns the node's settings by request id: those kept, when its open
// NodeMaintenances are the ones they were made of.
func (s *requestSettings) of(node string, open []*v1alpha1.NodeMaintenance) map[string]pools.RequestSettings {
	s.mu.Lock()
	defer s.mu.Unlock()
	if kept, ok := s.byNode[node]; ok && sameObjects(kept.open, open) {
		return kept.settings
	}
	if len(open) == 0 {
		delete(s.byNode, node)
		return nil
	}
	made := pools.NodeSettings(open)
	s.byNode[node] = nodeSettings{open: open, settings: made}
	return made
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
func (r *Reconciler) requestSettingsOf(open cacheread.Index[*v1alpha1.NodeMaintenance], node string) (map[string]pools.RequestSettings, error) {
	nms, err := open.By(node)
	if err != nil {
		return nil, fmt.Errorf("list the open maintenances of node %s: %w", node, err)
	}
	return r.settings.of(node, nms), nil
}
