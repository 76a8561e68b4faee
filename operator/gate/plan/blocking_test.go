package plan

import (
	"context"
	"testing"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/objectcheck"
)

// objectAnswers answers each node's object check from a table; a node
// not in it cannot be read.
type objectAnswers struct {
	holds map[string]bool
	asked []string
}

func (o *objectAnswers) Check(_ context.Context, _ v1alpha1.ObjectCheck, node string) (objectcheck.Result, error) {
	o.asked = append(o.asked, node)
	h, ok := o.holds[node]
	if !ok {
		return objectcheck.Result{}, &objectcheck.Error{Reason: v1alpha1.ObjectCheckForbiddenReason, Msg: "may not read " + node}
	}
	return objectcheck.Result{Holds: h, Subject: "node " + node}, nil
}

// A blocking check of a node is evaluated for each node whose turn came,
// and blocks at the first that is false or cannot be read; an evaluation
// that passes covers only the nodes it was made for.
func TestEvaluateBlockingObjectChecks(t *testing.T) {
	pool := &v1alpha1.MaintenancePool{Spec: v1alpha1.MaintenancePoolSpec{BlockingQueries: []v1alpha1.BlockingQuery{
		{Name: "quiet", Objects: &v1alpha1.CheckObjects{Node: &v1alpha1.NodeObjects{}}, Expression: "true"}}}}
	cases := map[string]struct {
		holds map[string]bool
		turn  []string
		// wantReason is the block's reason, empty for none; wantCovers
		// lists nodes a passing evaluation covers, and wantNotCovers some
		// it does not.
		wantReason    string
		wantCovers    []string
		wantNotCovers []string
	}{
		"true for every node": {holds: map[string]bool{"a": true, "b": true}, turn: []string{"a", "b"},
			wantCovers: []string{"a", "b"}, wantNotCovers: []string{"c"}},
		"false for one":      {holds: map[string]bool{"a": true, "b": false}, turn: []string{"a", "b"}, wantReason: v1alpha1.BlockingQueryReason},
		"one cannot be read": {holds: map[string]bool{"a": true}, turn: []string{"a", "b"}, wantReason: v1alpha1.ObjectCheckForbiddenReason},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := &objectAnswers{holds: tc.holds}
			b := EvaluateBlocking(context.Background(), nil, o, pool, tc.turn, t0)
			if b.Reason != tc.wantReason {
				t.Fatalf("reason %q (%s), want %q", b.Reason, b.Message, tc.wantReason)
			}
			if b.Blocks() {
				if !b.Covers(pool, []string{"z"}) {
					t.Errorf("a block holds every node")
				}
				return
			}
			if !b.Covers(pool, tc.wantCovers) {
				t.Errorf("the evaluation does not cover %v", tc.wantCovers)
			}
			if b.Covers(pool, tc.wantNotCovers) {
				t.Errorf("the evaluation covers %v, which it was not made for", tc.wantNotCovers)
			}
		})
	}
}

// No Prometheus blocks a pool with queries, not one with object checks
// alone.
func TestEvaluateBlockingWithoutPrometheus(t *testing.T) {
	objects := &objectAnswers{holds: map[string]bool{"a": true}}
	pool := &v1alpha1.MaintenancePool{Spec: v1alpha1.MaintenancePoolSpec{BlockingQueries: []v1alpha1.BlockingQuery{
		{Name: "pods-ok", Objects: &v1alpha1.CheckObjects{Pods: &v1alpha1.PodObjects{Namespace: "db"}}, Expression: "true"}}}}
	objects.holds[""] = true
	if b := EvaluateBlocking(context.Background(), nil, objects, pool, []string{"a"}, t0); b.Blocks() {
		t.Errorf("an object check alone needs no Prometheus: %s", b.Message)
	}
	if len(objects.asked) != 1 || objects.asked[0] != "" {
		t.Errorf("a check of pods is evaluated once, for no node: asked %q", objects.asked)
	}
	pool.Spec.BlockingQueries = append(pool.Spec.BlockingQueries, v1alpha1.BlockingQuery{Name: "alerts", Query: "ALERTS"})
	if b := EvaluateBlocking(context.Background(), nil, objects, pool, []string{"a"}, t0); b.Reason != v1alpha1.BlockingQueryFailedReason || b.Query != "alerts" {
		t.Errorf("a query without Prometheus blocks: %+v", b)
	}
}
