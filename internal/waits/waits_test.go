package waits_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/internal/waits"
	"github.com/kmaint/kmaint/policies"
	"github.com/kmaint/kmaint/test/gen"
)

// The pool's Blocked condition and its waiting requests' Waiting condition
// say the same hold because both are gathered here from the same pool: its
// spec (a pause, a blockingPodSelector that cannot be parsed), its Halted
// condition, its windows and the cluster's stop.
func TestThePoolAndItsNodeReadThePoolAlike(t *testing.T) {
	now := time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC)
	halted := []metav1.Condition{{Type: v1alpha1.HaltedCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.HealthCheckFailedReason, Message: "node n2 failed"}}
	badWindow := []v1alpha1.MaintenanceWindow{{Schedule: "0 5 * *", Duration: metav1.Duration{Duration: time.Hour}}}
	badPods := &v1alpha1.LabelSelector{MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
	stop := &v1alpha1.Stop{Reason: v1alpha1.ClusterPausedReason, Message: "every pool is paused by MaintenanceGate cluster: incident"}
	cases := map[string]struct {
		pool *v1alpha1.MaintenancePool
		stop *v1alpha1.Stop

		// wantReason is what holds the pool and its node alike; empty when
		// nothing does.
		wantReason string
	}{
		"the default pool without an object holds nothing": {},
		"paused":                          {pool: &v1alpha1.MaintenancePool{Spec: v1alpha1.MaintenancePoolSpec{Paused: true}}, wantReason: v1alpha1.PausedReason},
		"halted":                          {pool: &v1alpha1.MaintenancePool{Status: v1alpha1.MaintenancePoolStatus{Conditions: halted}}, wantReason: v1alpha1.HaltedReason},
		"a blockingPodSelector unparsed":  {pool: &v1alpha1.MaintenancePool{Spec: v1alpha1.MaintenancePoolSpec{BlockingPodSelector: badPods}}, wantReason: v1alpha1.InvalidBlockingPodSelectorReason},
		"a window that cannot be read":    {pool: &v1alpha1.MaintenancePool{Spec: v1alpha1.MaintenancePoolSpec{Windows: badWindow}}, wantReason: v1alpha1.InvalidWindowReason},
		"the cluster's stop, paused pool": {pool: &v1alpha1.MaintenancePool{Spec: v1alpha1.MaintenancePoolSpec{Paused: true}}, stop: stop, wantReason: v1alpha1.ClusterPausedReason},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			poolName := v1alpha1.DefaultPoolName
			if tc.pool != nil {
				poolName = "p"
				tc.pool.Name = poolName
			}
			src := waits.Sources{Pools: []string{poolName}, Pool: tc.pool, Stop: tc.stop, Windows: pools.NewWindows(now, tc.pool, nil)}
			s, _ := protocol.Read(gen.Node("n1", gen.BootID("b"), gen.RequestedIDs("b", v1alpha1.SourceHost, now, "r1")))

			poolReason, _, poolHeld := policies.First(policies.Holds(), waits.Pool(src))
			nodeReason, _, nodeHeld := policies.First(policies.Holds(), waits.Node(src, &s, pools.SettingsMap{}))
			g.Expect(poolHeld).To(Equal(tc.wantReason != ""), "the pool held (%s)", poolReason)
			g.Expect(poolReason).To(Equal(tc.wantReason))
			g.Expect(nodeHeld).To(Equal(poolHeld), "the node held (%s)", nodeReason)
			g.Expect(nodeReason).To(Equal(poolReason))
		})
	}
}

// A node that two pools select is held by their conflict, and a pool that
// cannot parse its selector and might select it is named as such.
func TestANodeInTwoPools(t *testing.T) {
	g := NewWithT(t)
	broken := v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "broken"},
		Spec: v1alpha1.MaintenancePoolSpec{NodeSelector: &v1alpha1.LabelSelector{MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}}}
	sel := pools.Selectors([]v1alpha1.MaintenancePool{broken})
	s, _ := protocol.Read(gen.Node("n1", gen.BootID("b")))

	in := waits.Node(waits.Sources{Pools: []string{"broken", v1alpha1.DefaultPoolName}, Selection: sel}, &s, nil)
	g.Expect(in.Pool).To(Equal("broken"))
	g.Expect(in.SelectorErr).To(HaveOccurred())
	g.Expect(in.Pools).To(Equal([]string{v1alpha1.DefaultPoolName}))
	reason, _, _ := policies.Wait(in)
	g.Expect(reason).To(Equal(v1alpha1.InvalidSelectorReason))
}
