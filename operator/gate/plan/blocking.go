package plan

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/policies"
)

// Block is what a pool's blocking queries said at one evaluation.
type Block struct {
	// At is when the queries were evaluated, by the gate's clock.
	At time.Time
	// Generation is the pool's generation they were evaluated for.
	Generation int64
	// Reason is v1alpha1.BlockingQueryReason or v1alpha1.BlockingQueryFailedReason while the
	// pool is blocked, empty when no query blocks.
	Reason string
	// Query names the query that blocks.
	Query   string
	Message string
}

// Blocks reports whether a query blocks the pool's admissions.
func (b Block) Blocks() bool { return b.Reason != "" }

// MadeAt is when the queries were evaluated (recent.Stamped).
func (b Block) MadeAt() time.Time { return b.At }

// EvaluateBlocking runs the pool's queries in order through q and stops at
// the first that returns a result or fails: either blocks, so the rest
// cannot change the answer. A nil q blocks: the operator has no Prometheus
// to ask.
func EvaluateBlocking(ctx context.Context, q policies.Querier, pool *v1alpha1.MaintenancePool, now time.Time) Block {
	b := Block{At: now, Generation: pool.Generation}
	if q == nil {
		b.Reason, b.Query = v1alpha1.BlockingQueryFailedReason, pool.Spec.BlockingQueries[0].Name
		b.Message = "The pool has blocking queries and the operator has no Prometheus URL configured; nothing is admitted until one is"
		return b
	}
	for _, bq := range pool.Spec.BlockingQueries {
		vec, err := q.Query(ctx, bq.Query, now)
		var qe *policies.QueryError
		switch {
		case errors.As(err, &qe):
			b.Reason, b.Query = v1alpha1.BlockingQueryFailedReason, bq.Name
			b.Message = fmt.Sprintf("Blocking query %q is refused by Prometheus: %s; nothing is admitted until it runs", bq.Name, qe.Msg)
			return b
		case err != nil:
			b.Reason, b.Query = v1alpha1.BlockingQueryFailedReason, bq.Name
			b.Message = fmt.Sprintf("Blocking query %q cannot be run, Prometheus is unreachable: %v; nothing is admitted until it runs", bq.Name, err)
			return b
		case len(vec) > 0:
			series := policies.SeriesText(vec[0].Metric)
			b.Reason, b.Query = v1alpha1.BlockingQueryReason, bq.Name
			b.Message = fmt.Sprintf("Blocking query %q returns %d series, first %s; nothing is admitted while it returns any", bq.Name, len(vec), series)
			return b
		}
	}
	return b
}
