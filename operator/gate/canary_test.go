package gate

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/gate/view"
)

func TestCanaryBudget(t *testing.T) {
	// node is a Ready node running config, settling or not.
	node := func(config string, settling bool) *view.Node {
		st := protocol.NodeState{Node: &corev1.Node{}, CurrentConfig: config, Ready: true}
		if settling {
			st.Settle = &protocol.Settle{}
		}
		return &view.Node{NodeState: st}
	}
	pool := func(desired string, canaries int32) *v1alpha1.MaintenancePool {
		return &v1alpha1.MaintenancePool{Spec: v1alpha1.MaintenancePoolSpec{DesiredConfig: desired,
			HealthChecks: &v1alpha1.HealthChecks{Queries: []v1alpha1.HealthCheck{{Name: "up", Query: "up == 0"}}, Canaries: canaries}}}
	}
	cases := map[string]struct {
		pool  *v1alpha1.MaintenancePool
		views []*view.Node
		max   int
		// wantBudget is the budget for admissions, wantLimits whether
		// the canaries lower it.
		wantBudget int
		wantLimits bool
	}{
		"no rollout under way: the pool's budget": {
			pool: pool("v2", 2), views: []*view.Node{node("v2", false), node("v2", false)}, max: 3, wantBudget: 3,
		},
		"no desiredConfig: the pool's budget": {
			pool: pool("", 2), views: []*view.Node{node("v1", false)}, max: 3, wantBudget: 3,
		},
		"rollout starts: no more than the canaries": {
			pool: pool("v2", 2), views: []*view.Node{node("v1", false), node("v1", false), node("v1", false)}, max: 3, wantBudget: 2, wantLimits: true,
		},
		"canaries settling have not passed": {
			pool: pool("v2", 2), views: []*view.Node{node("v2", true), node("v2", true), node("v1", false)}, max: 3, wantBudget: 2, wantLimits: true,
		},
		"one passed: one more may go": {
			pool: pool("v2", 2), views: []*view.Node{node("v2", false), node("v1", false), node("v1", false)}, max: 3, wantBudget: 1, wantLimits: true,
		},
		"all passed: the pool's budget": {
			pool: pool("v2", 2), views: []*view.Node{node("v2", false), node("v2", false), node("v1", false)}, max: 3, wantBudget: 3,
		},
		"more canaries than maxUnavailable: the budget is the tighter": {
			pool: pool("v2", 5), views: []*view.Node{node("v1", false), node("v1", false)}, max: 1, wantBudget: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			budget, _, _, limits := canaryBudget(&poolState{poolRead: poolRead{pool: tc.pool}, views: tc.views}, tc.max)
			g.Expect(budget).To(Equal(tc.wantBudget))
			g.Expect(limits).To(Equal(tc.wantLimits))
		})
	}
}
