package maintenance

import (
	"context"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
)

// poolOf returns a function naming the node's pool for metrics, computed
// the first time a phase change needs it: most reconciles change nothing.
// A node in two pools is counted under both names joined by "+", a node
// that no longer exists under "".
func (r *Reconciler) poolOf(ctx context.Context, node *corev1.Node) func() string {
	return sync.OnceValue(func() string {
		if node == nil {
			return ""
		}
		var list v1alpha1.MaintenancePoolList
		if err := r.List(ctx, &list); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "list pools for metrics")
			return ""
		}
		return strings.Join(pools.Of(node, pools.Selectors(list.Items)), "+")
	})
}

// count records what a status change means for the metrics: requests,
// reboots and completions (admissions and drains are the gate's). It runs after
// the change is written, so each change counts once: a write that fails is
// computed and counted again by the next reconcile.
func (r *Reconciler) count(base, nm *v1alpha1.NodeMaintenance, pool func() string) {
	if r.Metrics == nil {
		return
	}
	from, to := base.Status.Phase, nm.Status.Phase
	now := r.Clock.Now()
	source := string(nm.Spec.Source)
	if source == "" {
		source = string(v1alpha1.SourceAPI)
	}
	if from == "" && to != "" {
		r.Metrics.RequestSeen(source, pool(), nm.Spec.Policy)
	}
	times := nm.Status.PhaseTimes
	switch {
	case from == to:
	case to == v1alpha1.PhaseSettling:
		// Back Ready with a new boot: the reboot took this long, whatever
		// the settle time adds before the request succeeds.
		if times.Rebooting != nil {
			r.Metrics.Rebooted(pool(), now.Sub(times.Rebooting.Time))
		}
	case to == v1alpha1.PhaseSucceeded:
		if times.Rebooting != nil && base.Status.PhaseTimes.Settling == nil {
			r.Metrics.Rebooted(pool(), now.Sub(times.Rebooting.Time))
		}
		r.Metrics.Completed(pool(), source, "succeeded")
	case to == v1alpha1.PhaseFailed:
		// Abandoned drains are counted by the gate, which abandons them.
		if from == v1alpha1.PhaseRebooting || from == v1alpha1.PhaseApproved {
			r.Metrics.RebootFailed(pool(), failedReason(nm))
		}
		r.Metrics.Completed(pool(), source, "failed")
	}
	// A reboot that went wrong without failing the request (not observed,
	// the node not back, its daemon missing) counts under the reason its
	// Degraded condition gives.
	if was, is := meta.FindStatusCondition(base.Status.Conditions, v1alpha1.DegradedCondition), meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.DegradedCondition); is != nil && is.Status == metav1.ConditionTrue &&
		(was == nil || was.Status != metav1.ConditionTrue || was.Reason != is.Reason) {
		r.Metrics.RebootFailed(pool(), is.Reason)
	}
}

func failedReason(nm *v1alpha1.NodeMaintenance) string {
	if c := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.SucceededCondition); c != nil && c.Reason != "" {
		return c.Reason
	}
	return "Unknown"
}
