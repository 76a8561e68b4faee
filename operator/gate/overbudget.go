package gate

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/gate/plan"
	"github.com/kmaint/kmaint/operator/poolstatus"
)

// setOverBudget reports a pool that has more nodes counting against its
// budget than maxUnavailable allows. The gate never takes a pool there (it
// admits and approves within the budget, counting nodes in flight against
// every pool they are in and the pool that admitted them), but a person can:
// by relabelling a node in flight into the pool, lowering maxUnavailable,
// cordoning nodes; and nodes go NotReady. While it lasts no node that would
// add to the count is admitted and no drained node is approved. Each episode
// gets one Warning event and one count in the metrics; the condition says
// which nodes count, and why.
func (r *Reconciler) setOverBudget(ctx context.Context, st *poolState, last *v1alpha1.MaintenancePoolStatus) {
	pool := st.pool
	maxUnavailable, err := st.admission.budget, st.admission.budgetErr
	used := st.unavailable()
	// A pool whose selector cannot be parsed has no nodes of its own to
	// count; its condition Degraded says so.
	over := err == nil && st.selectorErr == nil && used > maxUnavailable
	msg := ""
	if over {
		msg = fmt.Sprintf("%d nodes count against a maxUnavailable of %d: %s; no node that would add to them is admitted and no drained node is approved until the pool is back within its budget",
			used, maxUnavailable, poolstatus.NameList(st.countedNodes()))
	}
	was := meta.FindStatusCondition(last.Conditions, v1alpha1.OverBudgetCondition)
	poolstatus.SetCondition(pool, v1alpha1.OverBudgetCondition, over, v1alpha1.TooManyUnavailableReason, v1alpha1.WithinBudgetReason, msg)
	if over && (was == nil || was.Status != metav1.ConditionTrue) {
		ctrl.LoggerFrom(ctx).Info("Pool over budget", "pool", pool.Name, "unavailable", used, "maxUnavailable", maxUnavailable)
		r.Recorder.Eventf(pool, nil, corev1.EventTypeWarning, v1alpha1.OverBudgetCondition, "Count", "%s", v1alpha1.FitMessage(msg))
		r.Metrics.OverBudget(pool.Name)
	}
}

// countedNodes names the nodes that count against the pool's budget, each
// with why.
func (st *poolState) countedNodes() []string {
	var names []string
	for _, v := range st.views {
		if v.UsesBudget() {
			names = append(names, fmt.Sprintf("%s (%s)", v.Node.Name, plan.UnavailableBecause(v)))
		}
	}
	for _, k := range st.members.Rebooting() {
		names = append(names, fmt.Sprintf("%s (%s)", k.Value.View.Node.Name, plan.UnavailableBecause(&k.Value.View)))
	}
	return names
}
