package gate

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/policies"
)

func (b blockResult) blocks() bool { return b.reason != "" }

func (b blockResult) MadeAt() time.Time { return b.at }

// blocking returns what the pool's blocking queries say now: the cached
// result while it is fresh for this generation of the pool, else a new
// evaluation. Only a pool with queries and nodes it would admit asks.
func (r *Reconciler) blocking(ctx context.Context, st *poolState) blockResult {
	pool := st.pool
	last, ok := r.blocks.Get(pool.UID)
	if ok && last.generation == pool.Generation && st.now.Sub(last.at) < r.BlockingQueryInterval {
		return last
	}
	b := r.evaluateBlocking(ctx, pool, st.now)
	r.blocks.Put(pool.UID, b, 10*r.BlockingQueryInterval)
	switch {
	case b.reason == v1alpha1.BlockingQueryFailedReason:
		ctrl.LoggerFrom(ctx).Info("Blocking query failed", "query", b.query, "message", b.message)
		r.Recorder.Eventf(pool, nil, corev1.EventTypeWarning, v1alpha1.BlockingQueryFailedReason, "Admit", "%s", b.message)
	case b.reason == v1alpha1.BlockingQueryReason && (last.reason != b.reason || last.query != b.query):
		r.Recorder.Eventf(pool, nil, corev1.EventTypeNormal, "BlockingQueryStarted", "Admit", "%s", b.message)
	case b.reason == "" && last.reason != "":
		r.Recorder.Eventf(pool, nil, corev1.EventTypeNormal, "BlockingQueryCleared", "Admit",
			"No blocking query blocks admissions any longer (last was %q)", last.query)
	}
	return b
}

// evaluateBlocking runs the pool's queries in order and stops at the first
// that returns a result or fails: either blocks, so the rest cannot change
// the answer.
func (r *Reconciler) evaluateBlocking(ctx context.Context, pool *v1alpha1.MaintenancePool, now time.Time) blockResult {
	b := blockResult{at: now, generation: pool.Generation}
	if r.Prometheus == nil {
		b.reason, b.query = v1alpha1.BlockingQueryFailedReason, pool.Spec.BlockingQueries[0].Name
		b.message = "The pool has blocking queries and the operator has no Prometheus URL configured; nothing is admitted until one is"
		return b
	}
	for _, q := range pool.Spec.BlockingQueries {
		vec, err := r.Prometheus.Query(ctx, q.Query, now)
		var qe *policies.QueryError
		switch {
		case errors.As(err, &qe):
			b.reason, b.query = v1alpha1.BlockingQueryFailedReason, q.Name
			b.message = fmt.Sprintf("Blocking query %q is refused by Prometheus: %s; nothing is admitted until it runs", q.Name, qe.Msg)
			return b
		case err != nil:
			b.reason, b.query = v1alpha1.BlockingQueryFailedReason, q.Name
			b.message = fmt.Sprintf("Blocking query %q cannot be run, Prometheus is unreachable: %v; nothing is admitted until it runs", q.Name, err)
			return b
		case len(vec) > 0:
			series := policies.SeriesText(vec[0].Metric)
			b.reason, b.query = v1alpha1.BlockingQueryReason, q.Name
			b.message = fmt.Sprintf("Blocking query %q returns %d series, first %s; nothing is admitted while it returns any", q.Name, len(vec), series)
			return b
		}
	}
	return b
}
