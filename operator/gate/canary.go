package gate

// canaryBudget is the pool's budget for new admissions while its rollout's
// canaries have not all passed: with healthChecks.canaries N, while a
// rollout of desiredConfig is under way (some node of the pool runs
// another config), and fewer than N nodes run the new config and have
// settled, no more nodes are unavailable than would make up the N. Settling
// canaries hold their slots, so once N are admitted, nothing more is until
// they pass. It returns maxUnavailable, and false, when no canary limits it.
func canaryBudget(st *poolState, maxUnavailable int) (budget, passed, want int, limits bool) {
	hc, want := st.pool.Spec.HealthChecks, 0
	if hc != nil {
		want = int(hc.Canaries)
	}
	config := st.pool.Spec.DesiredConfig
	if want <= 0 || config == "" {
		return maxUnavailable, 0, want, false
	}
	// The quiet members not among the views have no settle record: those
	// that run the config have passed.
	quiet := st.quiet()
	outdated := quiet.Current < quiet.Nodes
	passed = quiet.Current
	for _, v := range st.views {
		switch {
		case v.CurrentConfig != config:
			outdated = true
		case v.Settle == nil && !v.SettleUnreadable() && v.Unreadable == nil:
			passed++
		}
	}
	if !outdated || passed >= want || want-passed >= maxUnavailable {
		return maxUnavailable, passed, want, false
	}
	return want - passed, passed, want, true
}

// canariesHold reports whether the canaries' budget is what holds the
// plan's waiting nodes: the pool's own budget would admit one of them.
func canariesHold(p plan, budget int) bool {
	return len(p.admit) == 0 && p.pending() > p.optedOut+p.outsideWindow && p.unavailable >= budget && p.unavailable < p.maxUnavailable
}
