package maintenance

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
)

// guard is what a node's pool does with a node back from its reboot.
type guard struct {
	// guarded is true when the pool keeps it settling (settle time or
	// health checks) or runs afterReboot hooks: its requests succeed only
	// once aftercare completed the reboot and the node settled.
	guarded bool
	// checks is true when the pool has health checks (the Healthy
	// condition).
	checks bool
}

// guardOf reads the node's pool from the cache: the pool whose slot it
// holds while it settles, else the one that selects it. A node no single
// pool holds is not guarded: no pool completes its reboot.
func (r *Reconciler) guardOf(ctx context.Context, node *corev1.Node, f *protocol.NodeState) (guard, error) {
	if node == nil {
		return guard{}, nil
	}
	name := ""
	if f != nil && f.Settle != nil && f.Settle.Pool != "" {
		name = f.Settle.Pool
	} else {
		var list v1alpha1.MaintenancePoolList
		if err := r.List(ctx, &list); err != nil {
			return guard{}, fmt.Errorf("list pools: %w", err)
		}
		in := pools.Of(node, pools.Selectors(list.Items))
		if len(in) != 1 {
			return guard{}, nil
		}
		name = in[0]
	}
	pool := &v1alpha1.MaintenancePool{}
	switch err := r.Get(ctx, types.NamespacedName{Name: name}, pool); {
	case apierrors.IsNotFound(err):
		return guard{guarded: f != nil && f.Settle != nil}, nil
	case err != nil:
		return guard{}, fmt.Errorf("get pool %s: %w", name, err)
	}
	hc := pool.Spec.HealthChecks
	after := len(pool.Spec.Hooks.At(string(protocol.AfterReboot))) > 0
	return guard{guarded: pool.Spec.Guarded() || after, checks: hc != nil && len(hc.Queries) > 0}, nil
}

// health is the Healthy condition a verdict sets; zero sets none.
type health struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

// settling is the verdict of a request whose node settles after the
// reboot that carried it out.
func settling(v verdict, nm *v1alpha1.NodeMaintenance, s *protocol.Settle, g guard) verdict {
	node := nm.Spec.NodeName
	v.phase, v.bootIDAfter = v1alpha1.PhaseSettling, s.BootID
	switch {
	case s.Failure != nil && s.Failure.Recovered == nil:
		v.message = fmt.Sprintf("node %s is back with boot %s and failed a health check: %s; it keeps its slot and its pool %s is halted",
			node, s.BootID, s.Failure.Message(), s.Pool)
		v.health = health{metav1.ConditionFalse, v1alpha1.HealthCheckFailedReason, s.Failure.Message()}
		return v
	case s.Until.IsZero():
		v.message = fmt.Sprintf("node %s is back with boot %s and settles; it is not Ready, and its settle time starts again when it is", node, s.BootID)
	default:
		v.message = fmt.Sprintf("node %s is back with boot %s and settles until %s", node, s.BootID, s.Until.UTC().Format(time.RFC3339))
	}
	if g.checks || s.Failure != nil {
		msg := "the node settles and its health checks pass so far"
		if s.Failure != nil {
			msg = fmt.Sprintf("the node recovered at %s from %s, and settles again", s.Failure.Recovered.UTC().Format(time.RFC3339), s.Failure.Message())
		}
		v.health = health{metav1.ConditionUnknown, v1alpha1.HealthCheckingReason, msg}
	}
	return v
}

// settled is the Healthy condition of a request that succeeds after its
// node settled: passed, or resumed by a person after it failed.
func settled(nm *v1alpha1.NodeMaintenance) health {
	c := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.HealthyCondition)
	switch {
	case c == nil:
		return health{}
	case c.Status == metav1.ConditionFalse:
		return health{metav1.ConditionFalse, v1alpha1.HealthCheckResumedReason, "its pool was resumed after the node failed a health check: " + c.Message}
	default:
		return health{metav1.ConditionTrue, v1alpha1.HealthCheckPassedReason, "the node passed its health checks for its settle time"}
	}
}
