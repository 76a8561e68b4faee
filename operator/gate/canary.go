package gate

import "github.com/kmaint/kmaint/operator/gate/plan"

// canaryBudget is the pool's budget for new admissions while its rollout's
// canaries have not all passed (plan.CanaryBudget), with want its
// healthChecks.canaries. It returns maxUnavailable, and false, when no
// canary limits it.
func canaryBudget(st *poolState, maxUnavailable int) (budget, passed, want int, limits bool) {
	if hc := st.pool.Spec.HealthChecks; hc != nil {
		want = int(hc.Canaries)
	}
	budget, passed, limits = plan.CanaryBudget(want, st.pool.Spec.DesiredConfig, st.quiet(), st.views, maxUnavailable)
	return budget, passed, want, limits
}
