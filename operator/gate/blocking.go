package gate

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/gate/plan"
)

// blocking returns what the pool's blocking checks say now: the cached
// result while it is fresh for this generation of the pool (and, for the
// checks of a node, was made for the nodes whose turn came now), else a
// new evaluation. Only a pool with checks and nodes it would admit asks.
func (r *Reconciler) blocking(ctx context.Context, st *poolState) plan.Block {
	pool := st.pool
	// The nodes whose turn came: those a check of a node is evaluated for.
	turn := st.admission.plan.Admit
	last, ok := r.blocks.Get(pool.UID)
	if ok && last.Generation == pool.Generation && st.now.Sub(last.At) < r.BlockingQueryInterval && last.Covers(pool, turn) {
		return last
	}
	b := plan.EvaluateBlocking(ctx, r.Prometheus, r.objects, pool, turn, st.now)
	r.blocks.Put(pool.UID, b, 10*r.BlockingQueryInterval)
	switch {
	case b.Failed():
		ctrl.LoggerFrom(ctx).Info("Blocking check failed", "query", b.Query, "reason", b.Reason, "message", b.Message)
		r.Recorder.Eventf(pool, nil, corev1.EventTypeWarning, b.Reason, "Admit", "%s", b.Message)
	case b.Reason == v1alpha1.BlockingQueryReason && (last.Reason != b.Reason || last.Query != b.Query):
		r.Recorder.Eventf(pool, nil, corev1.EventTypeNormal, "BlockingQueryStarted", "Admit", "%s", b.Message)
	case b.Reason == "" && last.Reason != "":
		r.Recorder.Eventf(pool, nil, corev1.EventTypeNormal, "BlockingQueryCleared", "Admit",
			"No blocking query blocks admissions any longer (last was %q)", last.Query)
	}
	return b
}
