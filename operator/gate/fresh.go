package gate

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// The gate decides from the manager's cache, which is behind the API server
// by milliseconds as a rule, but by up to a minute after the API server was
// away: each informer's watch comes back on a backoff of its own (client-go's
// reflector waits up to 30s, jittered), so that the Nodes may be current
// while the pools are not. A budget lowered, a pool paused or halted, or the
// cluster stopped in that time would reach the gate only after it had
// admitted or approved the nodes the change forbids (a soak saw a pool
// lowered to 2 admit its 3rd and 4th node 22s later). So before a reconcile
// writes an admission or an approval, the writes that make a node
// unavailable, it reads the pool and the cluster's MaintenanceGate from the
// API server (a quorum read, one of each per reconcile at most) and acts
// only if its cache holds what decides: the pool's spec and Halted
// condition, and the MaintenanceGate's spec. When it does not, or when the
// API server cannot say, nothing is admitted or approved, the pool's Blocked
// condition says why, and the pool looks again in a moment: the cache's
// catching up also wakes it when it is the spec that changed.

// cacheBehindRetry is how soon a pool whose cache is behind looks again
// (Reconcile).
const cacheBehindRetry = time.Second

// cacheBehind reports why the pool's cache is behind what decides its
// admissions and approvals, or why that cannot be told; empty when the cache
// is current. The answer stands for the rest of the reconcile: it is the
// input of the CacheBehind hold (policies.Holds, holdBase), which holds
// admissions, and approve and force wait on it.
func (r *Reconciler) cacheBehind(ctx context.Context, st *poolState) string {
	f := &st.freshness
	if !f.asked {
		f.asked = true
		f.behind = r.readBehind(ctx, st.pool, st.gate)
	}
	return f.behind
}

// readBehind compares the pool and MaintenanceGate the reconcile decided
// from (cachedGate nil: there was none) with the API server's.
func (r *Reconciler) readBehind(ctx context.Context, cached *v1alpha1.MaintenancePool, cachedGate *v1alpha1.MaintenanceGate) string {
	live := &v1alpha1.MaintenancePool{}
	switch err := r.apiReader.Get(ctx, types.NamespacedName{Name: cached.Name}, live); {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return fmt.Sprintf("cannot tell whether the operator's cache holds MaintenancePool %s as it stands: %v", cached.Name, err)
	}
	if why := poolBehind(cached, live); why != "" {
		return why
	}
	liveGate, err := r.readGate(ctx, r.apiReader)
	if err != nil {
		return fmt.Sprintf("cannot tell whether the operator's cache holds MaintenanceGate %s as it stands: %v", v1alpha1.ClusterGateName, err)
	}
	return gateBehind(cachedGate, liveGate)
}

// readGate reads the cluster's MaintenanceGate through reader; nil when
// there is none.
func (r *Reconciler) readGate(ctx context.Context, reader client.Reader) (*v1alpha1.MaintenanceGate, error) {
	g := &v1alpha1.MaintenanceGate{}
	switch err := reader.Get(ctx, types.NamespacedName{Name: v1alpha1.ClusterGateName}, g); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get MaintenanceGate %s: %w", v1alpha1.ClusterGateName, err)
	}
	return g, nil
}

// poolBehind says how the cached pool differs from the API server's (live,
// nil when there is none) in what decides admissions and approvals: its
// identity, its spec, and its Halted condition. The built-in default pool
// without an object has no UID.
func poolBehind(cached, live *v1alpha1.MaintenancePool) string {
	name := cached.Name
	switch {
	case live == nil && cached.UID == "":
		return ""
	case live == nil:
		return fmt.Sprintf("MaintenancePool %s was deleted at the API server, and the operator's cache still has it", name)
	case live.UID != cached.UID:
		return fmt.Sprintf("MaintenancePool %s was created anew at the API server, and the operator's cache does not have it yet", name)
	case live.Unreadable() != nil:
		return fmt.Sprintf("MaintenancePool %s cannot be read at the API server (%v)", name, live.Unreadable())
	case live.Generation != cached.Generation:
		return fmt.Sprintf("MaintenancePool %s's spec changed at the API server (generation %d), and the operator's cache has generation %d",
			name, live.Generation, cached.Generation)
	case halted(live) != halted(cached):
		return fmt.Sprintf("MaintenancePool %s's Halted condition changed at the API server (%t), and the operator's cache has %t",
			name, halted(live), halted(cached))
	}
	return ""
}

// gateBehind says how the cached MaintenanceGate differs from the API
// server's in what decides admissions: whether there is one, which one, and
// its spec. Either may be nil.
func gateBehind(cached, live *v1alpha1.MaintenanceGate) string {
	name := v1alpha1.ClusterGateName
	switch {
	case cached == nil && live == nil:
		return ""
	case live == nil:
		return fmt.Sprintf("MaintenanceGate %s was deleted at the API server, and the operator's cache still has it", name)
	case cached == nil || live.UID != cached.UID:
		return fmt.Sprintf("MaintenanceGate %s was created at the API server, and the operator's cache does not have it yet", name)
	case live.Generation != cached.Generation:
		return fmt.Sprintf("MaintenanceGate %s's spec changed at the API server (generation %d), and the operator's cache has generation %d",
			name, live.Generation, cached.Generation)
	}
	return ""
}

func halted(p *v1alpha1.MaintenancePool) bool {
	return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.HaltedCondition)
}
