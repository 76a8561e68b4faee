package maintenance

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/internal/waits"
	"github.com/kmaint/kmaint/policies"
)

// waiting is why a raised request is not admitted yet.
type waiting struct {
	reason  string
	message string
	// next is when the request's windows open, for OutsideWindow, or its
	// freezes end with its windows open, for Frozen; zero when unknown.
	next time.Time
}

// poolFacts is what one reconcile read of a node's pool, to tell the node's
// waiting requests why they wait.
type poolFacts struct {
	// names are the pools that select the node, or might (see
	// pools.Selection); more than one admits it nowhere.
	names []string
	// selection tells which of them cannot parse their selector.
	selection pools.Selection
	// pool is the node's pool object; nil for the built-in default pool
	// without one.
	pool *v1alpha1.MaintenancePool
	// windows evaluates the node's requests' windows at the reconcile's now.
	windows *pools.Windows
	// settings gives, by request id, the node's NodeMaintenances' window
	// settings.
	settings pools.SettingsMap
	// unreadable say which MaintenancePools cannot be read, and why.
	unreadable []string
	// stop is what the cluster's MaintenanceGate says when it stops every
	// admission; nil when it does not.
	stop *v1alpha1.Stop
}

// readPool reads the node's pool and the cluster's RebootPolicies from the
// cache.
func (r *Reconciler) readPool(ctx context.Context, node *protocol.NodeState, items []v1alpha1.NodeMaintenance, now time.Time) (*poolFacts, error) {
	var poolList v1alpha1.MaintenancePoolList
	if err := r.List(ctx, &poolList); err != nil {
		return nil, fmt.Errorf("list pools: %w", err)
	}
	sel := pools.Selectors(poolList.Items)
	pf := &poolFacts{names: pools.Of(node.Node, sel), selection: sel, settings: pools.Settings(items)[node.Node.Name]}
	gate := &v1alpha1.MaintenanceGate{}
	switch err := r.Get(ctx, types.NamespacedName{Name: v1alpha1.ClusterGateName}, gate); {
	case err == nil:
		pf.stop = v1alpha1.StopOf(gate)
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get MaintenanceGate %s: %w", v1alpha1.ClusterGateName, err)
	}
	for i := range poolList.Items {
		if err := poolList.Items[i].Unreadable(); err != nil {
			pf.unreadable = append(pf.unreadable, fmt.Sprintf("MaintenancePool %s cannot be read (%v)", poolList.Items[i].Name, err))
		}
	}
	if len(pf.names) > 1 || len(pf.unreadable) > 0 {
		return pf, nil
	}
	pool := &v1alpha1.MaintenancePool{}
	switch err := r.Get(ctx, types.NamespacedName{Name: pf.names[0]}, pool); {
	case apierrors.IsNotFound(err):
		pool = nil
	case err != nil:
		return nil, fmt.Errorf("get pool %s: %w", pf.names[0], err)
	}
	pf.pool = pool
	var rebootPolicies v1alpha1.RebootPolicyList
	if err := r.List(ctx, &rebootPolicies); err != nil {
		return nil, fmt.Errorf("list reboot policies: %w", err)
	}
	pf.windows = pools.NewWindows(now, pool, rebootPolicies.Items)
	return pf, nil
}

// waitInput is what the node's requests wait for, gathered as the gate
// gathers what holds its pool (package waits).
func waitInput(pf *poolFacts, node *protocol.NodeState) policies.WaitInput {
	return waits.Node(waits.Sources{Pools: pf.names, Pool: pf.pool, Selection: pf.selection, Unreadable: pf.unreadable, Stop: pf.stop, Windows: pf.windows},
		node, pf.settings)
}

// waitFor says why the node's requests wait, when an open NodeMaintenance
// may show it: the chain decides what counts, and apply shows it only on a
// Requested NodeMaintenance.
func (r *Reconciler) waitFor(ctx context.Context, node *protocol.NodeState, items []v1alpha1.NodeMaintenance, now time.Time) (waiting, error) {
	if node == nil || node.Admission != nil || node.Approved != "" {
		return waiting{}, nil
	}
	if !slices.ContainsFunc(items, func(nm v1alpha1.NodeMaintenance) bool { return !nm.Status.Phase.Done() }) {
		return waiting{}, nil
	}
	pf, err := r.readPool(ctx, node, items, now)
	if err != nil {
		return waiting{}, err
	}
	return waitOf(pf, node, now), nil
}

// waitOf runs the wait chain for the node's requests at now.
func waitOf(pf *poolFacts, node *protocol.NodeState, now time.Time) waiting {
	in := waitInput(pf, node)
	in.Now = now
	reason, message, ok := policies.Wait(in)
	if !ok {
		return waiting{}
	}
	w := waiting{reason: reason, message: message}
	switch reason {
	case v1alpha1.OutsideWindowReason, v1alpha1.FrozenReason:
		w.next = in.Windows.Next
	case v1alpha1.DrainRetryBackoffReason:
		w.next = node.Retrying().NextAt
	}
	return w
}
