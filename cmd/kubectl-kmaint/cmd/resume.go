package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Resume lets a pool admit nodes again: it lifts spec.paused, and when the
// pool is halted by failed health checks, resumes the halt by writing
// kmaint.io/resume-halt with the time of the latest failure in
// status.halt. That time, not now, so that a failure the person did not
// see (one after the status was read) is not resumed with the others.
// A pool neither paused nor halted is left alone.
func Resume(ctx context.Context, c client.Client, w io.Writer, name string) error {
	pool, err := getPool(ctx, c, name)
	if err != nil {
		return err
	}
	var (
		patch = map[string]any{}
		said  []string
	)
	if pool.Spec.Paused {
		patch["spec"] = map[string]any{"paused": false}
		what := fmt.Sprintf("maintenancepool/%s resumed: %d waiting requests may be admitted again", name, pool.Status.PendingRequests)
		if gate, err := getGate(ctx, c); err == nil && v1alpha1.StopOf(gate) != nil {
			what += fmt.Sprintf(", once the cluster-wide pause is lifted (kubectl kmaint resume --all): %s", v1alpha1.StopOf(gate).Message)
		}
		said = append(said, what)
	}
	upTo, resumes := haltToResume(pool)
	if resumes != nil {
		if prev, ok := resumedUpTo(pool); ok && !prev.Before(upTo) {
			said = append(said, fmt.Sprintf("maintenancepool/%s halt already resumed up to %s (%s): %s; the operator lifts it when it next sees the pool",
				name, stamp(prev), v1alpha1.ResumeHaltAnnotation, strings.Join(resumes, "; ")))
		} else {
			patch["metadata"] = map[string]any{"annotations": map[string]any{v1alpha1.ResumeHaltAnnotation: stamp(upTo)}}
			said = append(said, fmt.Sprintf("maintenancepool/%s halt resumed up to %s (%s=%s); slots freed, nodes as they are: %s",
				name, stamp(upTo), v1alpha1.ResumeHaltAnnotation, stamp(upTo), strings.Join(resumes, "; ")))
		}
	} else if c := meta.FindStatusCondition(pool.Status.Conditions, v1alpha1.HaltedCondition); c != nil && c.Status == "True" {
		// Halted with no failed node to resume: its health checks cannot
		// run. Only they can lift that.
		said = append(said, fmt.Sprintf("maintenancepool/%s is halted (%s: %s): that lifts by itself once its health checks run; resume cannot lift it",
			name, c.Reason, c.Message))
	}
	if len(patch) > 0 {
		body, err := json.Marshal(patch)
		if err != nil {
			return err
		}
		if err := c.Patch(ctx, pool, client.RawPatch(types.MergePatchType, body)); err != nil {
			return fmt.Errorf("resume MaintenancePool %s: %w", name, err)
		}
	}
	if len(said) == 0 {
		said = append(said, fmt.Sprintf("maintenancepool/%s is neither paused nor halted: nothing to resume", name))
	}
	_, err = fmt.Fprintln(w, strings.Join(said, "\n"))
	return err
}

// haltToResume is the time of the latest failure of the pool's halt, and
// the failed nodes it resumes, as a person reads them; no nodes when the
// pool is not halted by a failed check.
func haltToResume(pool *v1alpha1.MaintenancePool) (time.Time, []string) {
	h := pool.Status.Halt
	if h == nil {
		return time.Time{}, nil
	}
	var latest time.Time
	var nodes []string
	for _, n := range h.Nodes {
		if n.Time.After(latest) {
			latest = n.Time.Time
		}
		if v1alpha1.IsHookHalt(n) {
			// A hook's failure: the resume runs the hook again.
			nodes = append(nodes, fmt.Sprintf("node %s (hook %q, %s, at %s: it runs again)", n.Node, n.Check, n.Value, stamp(n.Time.Time)))
			continue
		}
		nodes = append(nodes, fmt.Sprintf("node %s (health check %q, value %s, at %s)", n.Node, n.Check, or(n.Value), stamp(n.Time.Time)))
	}
	return latest.Truncate(time.Second), nodes
}

// resumedUpTo reads the pool's kmaint.io/resume-halt; false when absent or
// not an RFC 3339 time (the operator ignores such a value, so it is
// written again).
func resumedUpTo(pool *v1alpha1.MaintenancePool) (time.Time, bool) {
	v, ok := pool.Annotations[v1alpha1.ResumeHaltAnnotation]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	return t, err == nil
}
