package maintenance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/operator/api/protocol"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/pools"
	"github.com/kmaint/kmaint/policies"
)

// ConditionWaiting is True while a Requested NodeMaintenance waits for
// something other than its turn: a window, a blocking query, a pause, the
// pool's budget. Its reason says which, its message until when.
const ConditionWaiting = "Waiting"

// Reasons of the Waiting condition. The gate's pool conditions use the same
// words.
const (
	ReasonOutsideWindow       = "OutsideWindow"
	ReasonInvalidWindow       = "InvalidWindow"
	ReasonPaused              = "Paused"
	ReasonBlockingQuery       = "BlockingQuery"
	ReasonBlockingQueryFailed = "BlockingQueryFailed"
	ReasonBudgetExhausted     = "BudgetExhausted"
	ReasonConflicting         = "Conflicting"
)

// poolBlocked is the pool's condition that says why it admits nothing; the
// gate writes it (gate.ConditionBlocked).
const poolBlocked = "Blocked"

// waiting is why a raised request is not admitted yet.
type waiting struct {
	reason  string
	message string
	// next is when the request's windows open, for OutsideWindow; zero
	// when unknown.
	next time.Time
}

// poolFacts is what one reconcile read of a node's pool, to tell the node's
// waiting requests why they wait.
type poolFacts struct {
	// names are the pools that select the node; more than one admits it
	// nowhere.
	names []string
	// pool is the node's pool object; nil for the built-in default pool
	// without one.
	pool *v1alpha1.MaintenancePool
	// windowErr says why the pool's windows cannot be read.
	windowErr error
	// windows evaluates the node's requests' windows at the reconcile's now.
	windows *pools.Windows
	// requests gives, by request id, the node's NodeMaintenances' settings.
	requests map[string]v1alpha1.NodeMaintenanceSpec
}

// readPool reads the node's pool and the cluster's RebootPolicies from the
// cache; it is called only when the node has requests in Requested.
func (r *Reconciler) readPool(ctx context.Context, node *corev1.Node, items []v1alpha1.NodeMaintenance, now time.Time) (*poolFacts, error) {
	var poolList v1alpha1.MaintenancePoolList
	if err := r.List(ctx, &poolList); err != nil {
		return nil, fmt.Errorf("list pools: %w", err)
	}
	pf := &poolFacts{names: pools.Of(node, pools.Selectors(poolList.Items)), requests: map[string]v1alpha1.NodeMaintenanceSpec{}}
	for i := range items {
		pf.requests[requestID(&items[i])] = items[i].Spec
	}
	if len(pf.names) > 1 {
		return pf, nil
	}
	pool := &v1alpha1.MaintenancePool{}
	switch err := r.Get(ctx, types.NamespacedName{Name: pf.names[0]}, pool); {
	case apierrors.IsNotFound(err):
		pool = nil
	case err != nil:
		return nil, fmt.Errorf("get pool %s: %w", pf.names[0], err)
	}
	var windows []policies.Window
	if pool != nil {
		windows, pf.windowErr = policies.ParseWindows(pool.Spec.Windows)
	}
	pf.pool = pool
	var rebootPolicies v1alpha1.RebootPolicyList
	if err := r.List(ctx, &rebootPolicies); err != nil {
		return nil, fmt.Errorf("list reboot policies: %w", err)
	}
	pf.windows = pools.NewWindows(now, windows, rebootPolicies.Items)
	return pf, nil
}

// waitOf says why the node's raised requests wait, in the order the gate
// decides: a node is held by its windows before anything else counts, and
// by a blocking query or the budget only once its windows are open. The
// node's windows are open when any of its requests' are, as the gate reads
// them: the one reboot satisfies all.
func waitOf(pf *poolFacts, requested *protocol.Requested) waiting {
	if pf == nil || requested == nil {
		return waiting{}
	}
	if len(pf.names) > 1 {
		return waiting{reason: ReasonConflicting, message: fmt.Sprintf("its node is selected by pools %s, and no pool admits it until only one does", strings.Join(pf.names, ", "))}
	}
	name := pf.names[0]
	if pf.windowErr != nil {
		return waiting{reason: ReasonInvalidWindow, message: fmt.Sprintf("pool %s's spec.%v; nothing is admitted until it can be read", name, pf.windowErr)}
	}
	if pf.pool != nil && pf.pool.Spec.Paused {
		return waiting{reason: ReasonPaused, message: fmt.Sprintf("pool %s is paused", name)}
	}
	if w, held := windowWait(pf, name, requested); held {
		return w
	}
	if pf.pool == nil {
		return waiting{}
	}
	c := meta.FindStatusCondition(pf.pool.Status.Conditions, poolBlocked)
	if c == nil || c.Status != "True" {
		return waiting{}
	}
	switch c.Reason {
	case ReasonBlockingQuery, ReasonBlockingQueryFailed:
		return waiting{reason: c.Reason, message: fmt.Sprintf("pool %s: %s", name, c.Message)}
	case ReasonBudgetExhausted:
		return waiting{reason: c.Reason, message: fmt.Sprintf("pool %s has as many nodes unavailable as it allows (%d); it waits its turn", name, pf.pool.Status.MaxUnavailable)}
	}
	return waiting{}
}

// windowWait evaluates the node's requests' windows; held is false when one
// of them may be admitted now.
func windowWait(pf *poolFacts, pool string, requested *protocol.Requested) (w waiting, held bool) {
	var next time.Time
	var shut, problems []string
	for _, req := range requested.Requests {
		spec := pf.requests[req.ID]
		v := pf.windows.Request(spec.IgnoreWindows, spec.Policy)
		switch {
		case v.Open:
			return waiting{}, false
		case v.Problem != "":
			problems = append(problems, v.Problem)
			continue
		case !v.Next.IsZero() && (next.IsZero() || v.Next.Before(next)):
			next = v.Next
		}
		what := "pool " + pool
		if v.Policy != "" {
			what += " and RebootPolicy " + v.Policy
		}
		if !slices.Contains(shut, what) {
			shut = append(shut, what)
		}
	}
	var parts []string
	if len(shut) > 0 {
		msg := "outside the maintenance windows of " + strings.Join(shut, "; of ")
		if next.IsZero() {
			msg += "; no coming opening is known"
		} else {
			msg += "; the next opens at " + next.UTC().Format(time.RFC3339)
		}
		parts = append(parts, msg)
	}
	if len(problems) > 0 {
		parts = append(parts, "windows that cannot be read: "+strings.Join(problems, "; "))
	}
	reason := ReasonOutsideWindow
	if len(shut) == 0 {
		reason = ReasonInvalidWindow
	}
	return waiting{reason: reason, message: strings.Join(parts, "; "), next: next}, true
}
