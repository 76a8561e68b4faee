package plan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/objectcheck"
	"github.com/kmaint/kmaint/policies"
)

// Block is what a pool's blocking checks said at one evaluation.
type Block struct {
	// At is when the checks were evaluated, by the gate's clock.
	At time.Time
	// Generation is the pool's generation they were evaluated for.
	Generation int64
	// Reason is v1alpha1.BlockingQueryReason while a check blocks, the
	// reason a check cannot be evaluated while one cannot
	// (v1alpha1.BlockingQueryFailedReason for a query, an object check's
	// own), and empty when no check blocks.
	Reason string
	// Query names the check that blocks.
	Query   string
	Message string
	// Nodes are the nodes the per-node object checks (node, podsOnNode)
	// were evaluated for: the nodes whose turn had come. An evaluation
	// that blocks nothing lets through only those.
	Nodes []string
}

// Blocks reports whether a check blocks the pool's admissions.
func (b Block) Blocks() bool { return b.Reason != "" }

// Failed reports whether a check blocks because it cannot be evaluated.
func (b Block) Failed() bool { return b.Blocks() && b.Reason != v1alpha1.BlockingQueryReason }

// Covers reports whether the evaluation still says something of the
// nodes whose turn came now: a block holds them all, and a pass only the
// nodes its per-node object checks were evaluated for.
func (b Block) Covers(pool *v1alpha1.MaintenancePool, turn []string) bool {
	if b.Blocks() || !HasPerNodeChecks(pool) {
		return true
	}
	for _, n := range turn {
		if !slices.Contains(b.Nodes, n) {
			return false
		}
	}
	return true
}

// MadeAt is when the checks were evaluated (recent.Stamped).
func (b Block) MadeAt() time.Time { return b.At }

// ObjectChecker evaluates object checks (objectcheck.Checker).
type ObjectChecker interface {
	Check(ctx context.Context, oc v1alpha1.ObjectCheck, node string) (objectcheck.Result, error)
}

// HasPerNodeChecks reports whether the pool has blocking object checks of
// a node (node, podsOnNode): their answer is for the nodes whose turn came.
func HasPerNodeChecks(pool *v1alpha1.MaintenancePool) bool {
	return slices.ContainsFunc(pool.Spec.BlockingQueries, func(bq v1alpha1.BlockingQuery) bool {
		return bq.Objects != nil && bq.Objects.PerNode()
	})
}

// EvaluateBlocking runs the pool's checks in order and stops at the first
// that blocks or fails: either blocks, so the rest cannot change the
// answer. Queries go through q; a nil q blocks at the first query, the
// operator having no Prometheus to ask. Object checks go through objects:
// a node's (node, podsOnNode) for each node of turn, the nodes whose turn
// to be admitted came; a check of pods once. An object check that cannot
// be evaluated blocks with the reason it gives, never passes.
func EvaluateBlocking(ctx context.Context, q policies.Querier, objects ObjectChecker, pool *v1alpha1.MaintenancePool, turn []string, now time.Time) Block {
	b := Block{At: now, Generation: pool.Generation, Nodes: slices.Clone(turn)}
	for _, bq := range pool.Spec.BlockingQueries {
		if oc := bq.ObjectCheck(); oc != nil {
			if evaluateObjects(ctx, objects, &b, bq.Name, *oc, turn) {
				return b
			}
			continue
		}
		if q == nil {
			b.Reason, b.Query = v1alpha1.BlockingQueryFailedReason, bq.Name
			b.Message = "The pool has blocking queries and the operator has no Prometheus URL configured; nothing is admitted until one is"
			return b
		}
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

// evaluateObjects evaluates one blocking object check, over the nodes of
// turn or once for pods, and records in b what blocks; it reports whether
// something does.
func evaluateObjects(ctx context.Context, objects ObjectChecker, b *Block, name string, oc v1alpha1.ObjectCheck, turn []string) bool {
	nodes := turn
	if !oc.Objects.PerNode() {
		nodes = []string{""}
	}
	for _, n := range nodes {
		var res objectcheck.Result
		var err error
		if objects == nil {
			err = &objectcheck.Error{Reason: v1alpha1.ObjectCheckFailedReason, Msg: "the operator evaluates no object checks"}
		} else {
			res, err = objects.Check(ctx, oc, n)
		}
		switch {
		case err != nil:
			b.Reason, b.Query = objectcheck.ReasonOf(err), name
			b.Message = fmt.Sprintf("Blocking check %q cannot be evaluated%s: %v; nothing is admitted until it can", name, forNode(n), err)
			return true
		case !res.Holds:
			b.Reason, b.Query = v1alpha1.BlockingQueryReason, name
			b.Message = fmt.Sprintf("Blocking check %q is false for %s; nothing is admitted while it is", name, res.Subject)
			return true
		}
	}
	return false
}

func forNode(n string) string {
	if n == "" {
		return ""
	}
	return " for node " + n
}
