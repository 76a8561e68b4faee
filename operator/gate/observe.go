package gate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/operator/cacheread"
	"github.com/kmaint/kmaint/operator/gate/drainstep"
	"github.com/kmaint/kmaint/operator/gate/view"
	"github.com/kmaint/kmaint/operator/index"
	"github.com/kmaint/kmaint/operator/poolnodes"
	"github.com/kmaint/kmaint/policies"
)

// getPool returns the named pool. The built-in default pool exists without
// an object: it then has maxUnavailable 1 and no status to write. It returns
// nil for a deleted pool other than the default.
func (r *Reconciler) getPool(ctx context.Context, name string) (*v1alpha1.MaintenancePool, error) {
	pool := &v1alpha1.MaintenancePool{}
	err := r.Get(ctx, types.NamespacedName{Name: name}, pool)
	switch {
	case err == nil:
		return pool, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get pool %s: %w", name, err)
	case name == v1alpha1.DefaultPoolName:
		return &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil
	default:
		return nil, nil
	}
}

// observe reads the pool's nodes from the cache.
func (r *Reconciler) observe(ctx context.Context, pool *v1alpha1.MaintenancePool) (*poolState, error) {
	st := &poolState{poolRead: poolRead{pool: pool, now: r.Clock.Now()}, drains: map[string]drainstep.Report{}}
	var poolList v1alpha1.MaintenancePoolList
	if err := r.List(ctx, &poolList); err != nil {
		return nil, fmt.Errorf("list pools: %w", err)
	}
	for i := range poolList.Items {
		if err := poolList.Items[i].Unreadable(); err != nil {
			st.unreadablePools = append(st.unreadablePools, fmt.Sprintf("MaintenancePool %s cannot be read (%v)", poolList.Items[i].Name, err))
		}
	}
	st.selection = pools.Selectors(poolList.Items)
	st.selectorErr = st.selection.Err(pool.Name)
	var rebootPolicies v1alpha1.RebootPolicyList
	if err := r.List(ctx, &rebootPolicies); err != nil {
		return nil, fmt.Errorf("list reboot policies: %w", err)
	}
	var poolObj *v1alpha1.MaintenancePool
	if pool.UID != "" {
		poolObj = pool
	}
	wins := pools.NewWindows(st.now, poolObj, rebootPolicies.Items)
	st.admission.windows = wins
	st.observeFreeze(wins.PoolFreeze())
	unreadable, err := r.unreadableRequests(ctx)
	if err != nil {
		return nil, err
	}
	getNode, err := cacheread.Getter(ctx, r.cache, &corev1.Node{})
	if err != nil {
		return nil, fmt.Errorf("read nodes: %w", err)
	}
	openOnNode, err := cacheread.IndexOf(ctx, r.cache, &v1alpha1.NodeMaintenance{}, index.OpenOnNode)
	if err != nil {
		return nil, err
	}
	// What is kept of a node depends, besides the node, on these; what
	// changes with time alone is worked out here, at each reconcile.
	keptFor := strings.Join([]string{string(pool.UID), pool.Spec.DesiredConfig, st.selection.Key(), unreadableKey(unreadable)}, "\x00")
	m := r.members.Of(pool.Name)
	// The views only read the cached objects; a write goes through
	// patchNode, which copies.
	// Read before the views: every change up to it is in them.
	st.freshness.nodes = r.nodesSeen.Version()
	err = r.kept.Of(pool.Name).Sync(poolnodes.Sync[member]{
		Decoded: r.Decoded,
		List: func() ([]*corev1.Node, error) {
			nodes, err := cacheread.All(ctx, r.cache, &corev1.Node{})
			if err != nil {
				return nil, fmt.Errorf("list nodes: %w", err)
			}
			r.settings.ForgetGone(nodes)
			return nodes, nil
		},
		Get:       getNode,
		Pool:      pool.Name,
		Selection: st.selection,
		Context:   keptFor,
		Build: func(s protocol.NodeState, others []string) (member, error) {
			return r.keep(openOnNode, pool, st.selection, unreadable, st.now, s, others)
		},
		Reset: m.Reset,
		Set:   m.Set,
		Gone:  r.settings.Forget,
	})
	if err != nil {
		return nil, err
	}
	r.pass(st, m, wins)
	// The budget is resolved once: the plan, the approvals and the status
	// all count against this one number.
	st.admission.budget, st.admission.budgetErr = policies.ResolveMaxUnavailable(pool.Spec.MaxUnavailable, st.memberCount())
	if st.guarded() {
		// A control-plane pool lets one node go at a time, whatever
		// maxUnavailable says (controlplane.go).
		st.admission.budget = min(st.admission.budget, 1)
	}
	if err := r.observeOptOuts(ctx, st); err != nil {
		return nil, err
	}
	return st, nil
}

// unreadableRequests returns, by request id, the NodeMaintenances that
// cannot be read: their requests are never admitted, since nothing of them
// (their node, their windows, whether they are still open) can be told.
func (r *Reconciler) unreadableRequests(ctx context.Context) (map[string]string, error) {
	var list v1alpha1.NodeMaintenanceList
	if err := r.List(ctx, &list, client.MatchingFields{index.State: index.Unreadable}); err != nil {
		return nil, fmt.Errorf("list unreadable maintenances: %w", err)
	}
	ids := make(map[string]string, len(list.Items))
	for i := range list.Items {
		ids[list.Items[i].RequestID()] = list.Items[i].Name
	}
	return ids, nil
}

// keep makes what observe keeps of a node of the pool (pools.Of).
func (r *Reconciler) keep(open cacheread.Index[*v1alpha1.NodeMaintenance], pool *v1alpha1.MaintenancePool, sel pools.Selection,
	unreadable map[string]string, now time.Time, s protocol.NodeState, others []string) (member, error) {
	v := view.Of(s)
	v.OtherPools = others
	v.Relabelled = view.Relabelled(s, pool.Name, sel)
	k := view.Kept{}
	if cur := v.Current(); cur != nil {
		settings, err := r.requestSettingsOf(open, &v)
		if err != nil {
			return member{}, err
		}
		k.Settings = settings
		v.QueueMoves = pools.QueueTimeMoves(cur.Requests, settings)
		v.QueuedAt = pools.QueueTime(cur.Requests, settings, now)
		v.StaleConfig = view.StaleConfig(cur.Requests, pool.Spec.DesiredConfig)
		k.Requests = v.HoldUnreadable(cur.Requests, unreadable)
	}
	place := v.Place(pool.Spec.DesiredConfig, sel.Err(pool.Name) == nil)
	v.Queued = place.Queued
	k.View = v
	return member{Value: k, Place: place}, nil
}

// requestSettingsOf returns, by request id, what the node's open
// NodeMaintenances (found by open) say of its requests: their windows,
// freezes and policy, and when each was made, which bounds the node's
// place in the queue.
func (r *Reconciler) requestSettingsOf(open cacheread.Index[*v1alpha1.NodeMaintenance], v *view.Node) (pools.SettingsList, error) {
	return r.settings.Of(v.Node.Name, v.Requested, func() ([]*v1alpha1.NodeMaintenance, error) {
		nms, err := open.By(v.Node.Name)
		if err != nil {
			return nil, fmt.Errorf("list the open maintenances of node %s: %w", v.Node.Name, err)
		}
		return nms, nil
	})
}

// unreadableKey names the set of unreadable requests (unreadableRequests)
// in a kept view's context: a request that turns unreadable holds its
// node, wherever it is.
func unreadableKey(unreadable map[string]string) string {
	ids := make([]string, 0, len(unreadable))
	for id := range unreadable {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return strings.Join(ids, ",")
}

// replace puts a node the gate just wrote back into the state, so that later
// phases and the status see the write, and returns its view as written (nil
// for a node not among the views).
func (st *poolState) replace(node *corev1.Node) *view.Node {
	for i := range st.views {
		if st.views[i].Node.Name == node.Name {
			// What only the gate knows (its windows, freezes, place in the
			// queue, opt-outs) stays: the operator's writes change none of
			// the node's requests it was found from. A fresh view would
			// take a node outside its window, or frozen, for one free to
			// go, in the rest of this pass.
			// A copy: the view the reconcile started from is kept for the
			// next (poolnodes.Kept), with the node the cache holds.
			written := *st.views[i]
			written.NodeState = view.Read(node).NodeState
			st.views[i] = &written
			return &written
		}
	}
	return nil
}

// wakeAt asks for a reconcile at t at the latest; zero asks nothing.
func (st *poolState) wakeAt(t time.Time) {
	if !t.IsZero() && (st.wake.IsZero() || t.Before(st.wake)) {
		st.wake = t
	}
}

// index is the position of the named node's view; -1 when the pool has
// none.
func (st *poolState) index(name string) int {
	for i := range st.views {
		if st.views[i].Node.Name == name {
			return i
		}
	}
	return -1
}

// view is the named node's view; a zero view when the pool has none.
func (st *poolState) view(name string) *view.Node {
	if i := st.index(name); i >= 0 {
		return st.views[i]
	}
	return &view.Node{}
}

// unavailable counts the nodes against the pool's budget: its own that are
// unavailable, quiet or not, and those it admitted that are in another
// pool now.
func (st *poolState) unavailable() int {
	n := st.counted()
	for _, v := range st.views {
		if v.UsesBudget() {
			n++
		}
	}
	return n
}
