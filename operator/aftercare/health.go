package aftercare

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/objectcheck"
	"github.com/kmaint/kmaint/policies"
)

// healthResult is one evaluation of a pool's health checks.
type healthResult struct {
	// at is when they ran, by aftercare's clock.
	at time.Time
	// generation is the pool's generation they ran for.
	generation int64
	// err says why they could not run (no Prometheus, unreachable, a
	// query refused, an object check that cannot be evaluated); empty
	// when they ran. No node passes then.
	err string
	// errReason is the Halted condition's reason while err is set: an
	// object check's own (InvalidObjectCheck, ObjectCheckForbidden ...),
	// else HealthCheckUnavailable.
	errReason string
	// bad is, by node name, the first bad result the checks returned for
	// a settling node.
	bad map[string]badResult
}

func (h healthResult) MadeAt() time.Time { return h.at }

// badResult is a series a health check returned for a node.
type badResult struct {
	check  string
	value  string
	series string
}

// health returns the latest evaluation of the pool's checks for its
// settling nodes: the cached one while it is younger than the checks'
// interval (and of this generation of the pool), else a new one. All the
// pool's settling nodes share one query per check.
func (r *Reconciler) health(ctx context.Context, st *poolState, settling []string, nodes []corev1.Node) (healthResult, time.Time) {
	hc := st.pool.Spec.HealthChecks
	interval := hc.CheckInterval()
	last, ok := r.healthChecks.Get(st.pool.UID)
	if ok && last.generation == st.pool.Generation && st.now.Sub(last.at) < interval {
		return last, last.at.Add(interval)
	}
	h := r.evaluateHealth(ctx, hc, st.pool.Generation, settling, nodes, st.now)
	r.healthChecks.Put(st.pool.UID, h, 10*v1alpha1.MaxHealthCheckInterval)
	return h, h.at.Add(interval)
}

// evaluateHealth runs every check once; the first check that cannot run
// makes the whole evaluation unusable, since a node it would have found bad
// must not pass.
func (r *Reconciler) evaluateHealth(ctx context.Context, hc *v1alpha1.HealthChecks, generation int64, settling []string, nodes []corev1.Node, now time.Time) healthResult {
	h := healthResult{at: now, generation: generation, bad: map[string]badResult{}}
	wanted := map[string]bool{}
	for _, n := range settling {
		wanted[n] = true
	}
	for _, q := range hc.Queries {
		if oc := q.ObjectCheck(); oc != nil {
			if !r.evaluateObjects(ctx, &h, q.Name, *oc, settling) {
				return h
			}
			continue
		}
		if r.Prometheus == nil {
			h.err = "the pool has health checks and the operator has no Prometheus URL configured"
			return h
		}
		vec, err := r.Prometheus.Query(ctx, q.Query, now)
		var qe *policies.QueryError
		switch {
		case errors.As(err, &qe):
			h.err = fmt.Sprintf("health check %q is refused by Prometheus: %s", q.Name, qe.Msg)
			return h
		case err != nil:
			h.err = fmt.Sprintf("health check %q cannot be run, Prometheus is unreachable: %v", q.Name, err)
			return h
		}
		label := q.NodeLabel
		if label == "" {
			label = "node"
		}
		resolver := policies.NewNodeResolver(nodes, q.MatchNodeBy)
		for _, s := range vec {
			name, ok := resolver.Resolve(string(s.Metric[model.LabelName(label)]))
			if _, seen := h.bad[name]; !ok || !wanted[name] || seen {
				continue
			}
			h.bad[name] = badResult{check: q.Name, value: sampleValue(s.Value), series: policies.SeriesText(s.Metric)}
		}
	}
	return h
}

// evaluateObjects evaluates one health object check for each settling
// node (node, podsOnNode) or once for them all (pods), and records a
// false as a bad result for the node (for every settling node: pods). It
// reports false, with h.err set, when the check cannot be evaluated for
// one of them: no node may pass then, as for a query that cannot run.
func (r *Reconciler) evaluateObjects(ctx context.Context, h *healthResult, name string, oc v1alpha1.ObjectCheck, settling []string) bool {
	nodes := settling
	if !oc.Objects.PerNode() {
		nodes = []string{""}
	}
	for _, n := range nodes {
		res, err := r.objects.Check(ctx, oc, n)
		if err != nil {
			h.errReason = objectcheck.ReasonOf(err)
			h.err = fmt.Sprintf("health check %q cannot be evaluated", name)
			if n != "" {
				h.err += " for node " + n
			}
			h.err += fmt.Sprintf(" (%s): %v", h.errReason, err)
			return false
		}
		if res.Holds {
			continue
		}
		bad := badResult{check: name, value: "false", series: "the expression is false for " + res.Subject}
		for _, s := range settling {
			if _, seen := h.bad[s]; !seen && (n == "" || s == n) {
				h.bad[s] = bad
			}
		}
	}
	return true
}

func sampleValue(v model.SampleValue) string {
	f := float64(v)
	if math.IsNaN(f) {
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
