package poolstatus

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// RolloutStarted says that the pool's desiredConfig has just reached nodes
// that do not run it (outdated of the pool's nodes): a rollout is under
// way. It says so once per config: a pass on a cache that does not show the
// config written yet writes it again, and is not a new rollout. An operator
// that restarts halfway through writing the config says it again when it
// writes the rest.
func (w *Writer) RolloutStarted(ctx context.Context, pool *v1alpha1.MaintenancePool, outdated, nodes int) {
	want := pool.Spec.DesiredConfig
	if !w.rollouts.announce(pool.UID, want) {
		return
	}
	ctrl.LoggerFrom(ctx).Info("Rollout started", "config", want, "outdated", outdated)
	w.recorder.Eventf(pool, nil, corev1.EventTypeNormal, v1alpha1.RolloutStartedReason, "Rollout",
		"Rollout of config %s started: %d of %d nodes to reboot into it", want, outdated, nodes)
}

// rolloutFinished says, once the status saying so is written, that every
// node of the pool now runs its desiredConfig, when the status written
// before had some that did not. The status is the record, so an operator
// that restarts neither repeats nor misses it (but for an event lost with
// the operator that wrote the status).
func (w *Writer) rolloutFinished(ctx context.Context, pool *v1alpha1.MaintenancePool, before *v1alpha1.MaintenancePoolStatus) {
	s := &pool.Status
	if pool.Spec.DesiredConfig == "" || s.Nodes == 0 || s.Updated != s.Nodes || before.Updated >= before.Nodes {
		return
	}
	ctrl.LoggerFrom(ctx).Info("Rollout finished", "config", pool.Spec.DesiredConfig, "nodes", s.Nodes)
	w.recorder.Eventf(pool, nil, corev1.EventTypeNormal, v1alpha1.RolloutFinishedReason, "Rollout",
		"Rollout of config %s finished: all %d nodes run it", pool.Spec.DesiredConfig, s.Nodes)
}

// rollouts remembers, per pool, the config whose rollout was announced.
type rollouts struct {
	mu   sync.Mutex
	last map[types.UID]string
}

// announce reports whether config's rollout in the pool is not announced
// yet, and remembers it as announced.
func (r *rollouts) announce(pool types.UID, config string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[types.UID]string{}
	}
	if r.last[pool] == config {
		return false
	}
	r.last[pool] = config
	return true
}
