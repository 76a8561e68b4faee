package plan

import (
	"github.com/kmaint/kmaint/operator/gate/members"
	"github.com/kmaint/kmaint/operator/gate/view"
)

// CanaryBudget is the pool's budget for new admissions while its rollout's
// canaries have not all passed: with healthChecks.canaries want, while a
// rollout of config (the pool's desiredConfig) is under way (some node of
// the pool runs another config), and fewer than want nodes run the new
// config and have settled, no more nodes are unavailable than would make
// up the want. Settling canaries hold their slots, so once want are
// admitted, nothing more is until they pass. quiet counts the pool's quiet
// members not among views. It returns maxUnavailable, and false, when no
// canary limits it.
func CanaryBudget(want int, config string, quiet members.Tally, views []*view.Node, maxUnavailable int) (budget, passed int, limits bool) {
	if want <= 0 || config == "" {
		return maxUnavailable, 0, false
	}
	// The quiet members not among the views have no settle record: those
	// that run the config have passed.
	outdated := quiet.Current < quiet.Nodes
	passed = quiet.Current
	for _, v := range views {
		switch {
		case v.CurrentConfig != config:
			outdated = true
		case v.Settle == nil && !v.SettleUnreadable() && v.Unreadable == nil:
			passed++
		}
	}
	if !outdated || passed >= want || want-passed >= maxUnavailable {
		return maxUnavailable, passed, false
	}
	return want - passed, passed, true
}

// CanariesHold reports whether the canaries' budget is what holds the
// plan's waiting nodes: the pool's own budget would admit one of them.
func CanariesHold(p Plan, budget int) bool {
	return len(p.Admit) == 0 && p.Pending() > p.OptedOut+p.OutsideWindow && p.Unavailable >= budget && p.Unavailable < p.MaxUnavailable
}
