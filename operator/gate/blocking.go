package gate

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/gate/plan"
)

// blocking returns what the pool's blocking queries say now: the cached
// result while it is fresh for this generation of the pool, else a new
// evaluation. Only a pool with queries and nodes it would admit asks.
func (r *Reconciler) blocking(ctx context.Context, st *poolState) plan.Block {
	pool := st.pool
	last, ok := r.blocks.Get(pool.UID)
	if ok && last.Generation == pool.Generation && st.now.Sub(last.At) < r.BlockingQueryInterval {
		return last
	}
	b := plan.EvaluateBlocking(ctx, r.Prometheus, pool, st.now)
	r.blocks.Put(pool.UID, b, 10*r.BlockingQueryInterval)
	switch {
	case b.Reason == v1alpha1.BlockingQueryFailedReason:
		ctrl.LoggerFrom(ctx).Info("Blocking query failed", "query", b.Query, "message", b.Message)
		r.Recorder.Eventf(pool, nil, corev1.EventTypeWarning, v1alpha1.BlockingQueryFailedReason, "Admit", "%s", b.Message)
	case b.Reason == v1alpha1.BlockingQueryReason && (last.Reason != b.Reason || last.Query != b.Query):
		r.Recorder.Eventf(pool, nil, corev1.EventTypeNormal, "BlockingQueryStarted", "Admit", "%s", b.Message)
	case b.Reason == "" && last.Reason != "":
		r.Recorder.Eventf(pool, nil, corev1.EventTypeNormal, "BlockingQueryCleared", "Admit",
			"No blocking query blocks admissions any longer (last was %q)", last.Query)
	}
	return b
}
