package gate

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/operator/api/protocol"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
	"github.com/kmaint/kmaint/policies"
)

// poolState is one reconcile's picture of a pool: the pool, its nodes, and
// what the phases learned and did.
type poolState struct {
	pool  *v1alpha1.MaintenancePool
	views []nodeView
	now   time.Time

	// selectorErr says why the pool's selector could not be used.
	selectorErr error
	// windowErr says why the pool's windows could not be used; nothing is
	// admitted then.
	windowErr error
	// window is the pool's maintenance windows at now.
	window policies.WindowState
	// plan is the admission decision, once made.
	plan plan
	// drains holds each draining node's last drain step, by node name.
	drains map[string]drainReport
}

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

// poolSelectors returns every pool's node selector but the default pool's.
// Pools whose selector is invalid select nothing and are reported by their
// own reconcile.
func poolSelectors(pools []v1alpha1.MaintenancePool) map[string]labels.Selector {
	selectors := make(map[string]labels.Selector, len(pools))
	for i := range pools {
		p := &pools[i]
		if p.Name == v1alpha1.DefaultPoolName || p.Spec.NodeSelector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.NodeSelector)
		if err != nil {
			continue
		}
		selectors[p.Name] = sel
	}
	return selectors
}

// poolsOf returns the pools that select a node: the pools whose selector
// matches it, or the default pool when none does.
func poolsOf(node *corev1.Node, selectors map[string]labels.Selector) []string {
	var names []string
	for name, sel := range selectors {
		if sel.Matches(labels.Set(node.Labels)) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return []string{v1alpha1.DefaultPoolName}
	}
	slices.Sort(names)
	return names
}

// observe reads the pool's nodes from the cache.
func (r *Reconciler) observe(ctx context.Context, pool *v1alpha1.MaintenancePool) (*poolState, error) {
	st := &poolState{pool: pool, now: r.Clock.Now(), drains: map[string]drainReport{}}
	if pool.Name != v1alpha1.DefaultPoolName {
		if _, err := metav1.LabelSelectorAsSelector(pool.Spec.NodeSelector); err != nil {
			st.selectorErr = fmt.Errorf("spec.nodeSelector: %w", err)
			return st, nil
		}
	}
	var windows []policies.Window
	for i, w := range pool.Spec.Windows {
		parsed, err := policies.ParseWindow(w)
		if err != nil {
			// Reported, and nothing is admitted: a window that cannot be
			// read is not taken for an open one.
			st.windowErr = fmt.Errorf("spec.windows[%d]: %w", i, err)
			break
		}
		windows = append(windows, parsed)
	}
	if st.windowErr == nil {
		st.window = policies.AnyOpen(windows, st.now)
	}
	// Which requests may ignore windows matters only while they are shut.
	var ignoring map[string]bool
	if !st.window.Open {
		var err error
		if ignoring, err = r.requestsIgnoringWindows(ctx); err != nil {
			return nil, err
		}
	}
	var pools v1alpha1.MaintenancePoolList
	if err := r.List(ctx, &pools); err != nil {
		return nil, fmt.Errorf("list pools: %w", err)
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	selectors := poolSelectors(pools.Items)
	for i := range nodes.Items {
		node := &nodes.Items[i]
		in := poolsOf(node, selectors)
		if !slices.Contains(in, pool.Name) {
			continue
		}
		v := newNodeView(node)
		v.otherPools = slices.DeleteFunc(in, func(p string) bool { return p == pool.Name })
		v.inflight = r.inflight.pending(node.Name, node.ResourceVersion, v.admission != nil, st.now)
		if v.requested != nil {
			v.ignoresWindows = slices.ContainsFunc(v.requested.Requests, func(req protocol.Request) bool { return ignoring[req.ID] })
		}
		st.views = append(st.views, v)
	}
	slices.SortFunc(st.views, func(a, b nodeView) int { return cmp.Compare(a.node.Name, b.node.Name) })
	return st, nil
}

// requestsIgnoringWindows returns the request ids (NodeMaintenance UIDs) of
// open NodeMaintenances that may be admitted outside maintenance windows.
func (r *Reconciler) requestsIgnoringWindows(ctx context.Context) (map[string]bool, error) {
	var list v1alpha1.NodeMaintenanceList
	if err := r.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list maintenances: %w", err)
	}
	ids := map[string]bool{}
	for _, nm := range list.Items {
		if nm.Spec.IgnoreWindows && !nm.Status.Phase.Done() {
			ids[string(nm.UID)] = true
		}
	}
	return ids, nil
}

// replace puts a node the gate just wrote back into the state, so that later
// phases and the status see the write.
func (st *poolState) replace(node *corev1.Node) {
	for i := range st.views {
		if st.views[i].node.Name == node.Name {
			v := newNodeView(node)
			v.otherPools = st.views[i].otherPools
			st.views[i] = v
			return
		}
	}
}
