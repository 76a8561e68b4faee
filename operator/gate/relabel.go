package gate

import (
	"context"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/gate/view"
)

// relabels remembers which relabelled nodes in flight the gate told of, and
// the pools their labels named then, so that it tells each move once, not
// at every reconcile. Forgotten at a restart: the move is told once more.
type relabels struct {
	mu   sync.Mutex
	told map[string]string
}

func newRelabels() *relabels { return &relabels{told: map[string]string{}} }

// forgetPool forgets what was told of a deleted pool's nodes.
func (l *relabels) forgetPool(pool string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, key := range l.told {
		if strings.HasPrefix(key, pool+"\x00") {
			delete(l.told, name)
		}
	}
}

// tellRelabelled tells, once per move, of each node in flight in the pool
// whose labels put it elsewhere now (view.Node.Relabelled): a Warning event
// on the node and the pool. It stays the pool's until its maintenance ends
// (pools.Of): its budget, drain, marks and hooks are the pool's, and the
// pools its labels name now neither drive it nor drop what it waits for.
// A node that no longer is so is forgotten.
func (r *Reconciler) tellRelabelled(ctx context.Context, st *poolState) {
	prefix := st.pool.Name + "\x00"
	now := map[string]bool{}
	var tell []*view.Node
	r.relabels.mu.Lock()
	for _, v := range st.views {
		if len(v.Relabelled) == 0 {
			continue
		}
		key := prefix + strings.Join(v.Relabelled, ",")
		now[v.Node.Name] = true
		if r.relabels.told[v.Node.Name] != key {
			r.relabels.told[v.Node.Name] = key
			tell = append(tell, v)
		}
	}
	for name, key := range r.relabels.told {
		if !now[name] && strings.HasPrefix(key, prefix) {
			delete(r.relabels.told, name)
		}
	}
	r.relabels.mu.Unlock()
	for _, v := range tell {
		in := strings.Join(v.Relabelled, ", ")
		ctrl.LoggerFrom(ctx).Info("Node relabelled in flight", "node", v.Node.Name, "labels", v.Relabelled)
		r.events.Both(st.pool, v.Node, corev1.EventTypeWarning, v1alpha1.RelabelledInFlightReason, "Relabel",
			"Node %s's labels put it in pool %s now; it stays in pool %s, which admitted it, until its maintenance ends: %s's budget, drain and hooks apply, and %s does not drive it",
			v.Node.Name, in, st.pool.Name, st.pool.Name, in)
	}
}
