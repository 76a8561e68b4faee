package maintenance

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/test/gen"
)

func TestWaitOf(t *testing.T) {
	window := func(schedule string) []v1alpha1.MaintenanceWindow {
		return []v1alpha1.MaintenanceWindow{{Schedule: schedule, Duration: metav1.Duration{Duration: time.Hour}}}
	}
	rebootPolicies := []v1alpha1.RebootPolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: "at5"}, Spec: v1alpha1.RebootPolicySpec{Windows: window("0 5 * * *")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "broken"}, Spec: v1alpha1.RebootPolicySpec{Windows: window("0 5 * *")}},
	}
	// blocked is what the gate reports of a pool held by a blocking query.
	blocked := func(reason, message string) v1alpha1.MaintenancePoolStatus {
		return v1alpha1.MaintenancePoolStatus{MaxUnavailable: 1, BlockingQuery: &v1alpha1.BlockingQueryStatus{Name: "alerts", Reason: reason, Message: message}}
	}
	// exhausted is a pool with as many nodes unavailable as it allows.
	exhausted := v1alpha1.MaintenancePoolStatus{MaxUnavailable: 1, Unavailable: 1, Nodes: 3}
	cases := map[string]struct {
		// poolWindows and paused and status make the node's pool; no
		// pool at all when noPool.
		poolWindows []v1alpha1.MaintenanceWindow
		paused      bool
		status      v1alpha1.MaintenancePoolStatus
		noPool      bool
		names       []string
		// specs are the node's requests' NodeMaintenance specs by id; the
		// node requests each id listed in ids.
		specs map[string]v1alpha1.NodeMaintenanceSpec
		ids   []string

		wantReason  string
		wantMessage string
		wantNext    time.Time
	}{
		"the default pool without an object: nothing to wait for": {noPool: true, ids: []string{"h"}},
		"a node in two pools": {names: []string{"a", "b"}, ids: []string{"h"}, wantReason: v1alpha1.ConflictingReason, wantMessage: "a, b"},
		"paused":              {paused: true, ids: []string{"h"}, wantReason: v1alpha1.PausedReason},
		"the pool's window shut": {
			poolWindows: window("0 4 * * *"), ids: []string{"h"},
			wantReason: v1alpha1.OutsideWindowReason, wantMessage: "pool p; the next opens at 2025-03-01T04:00:00Z", wantNext: t0.Add(2 * time.Hour),
		},
		"the policy's window shut": {
			specs: map[string]v1alpha1.NodeMaintenanceSpec{"m": {Policy: "at5"}}, ids: []string{"m"},
			wantReason: v1alpha1.OutsideWindowReason, wantMessage: "pool p and RebootPolicy at5; the next opens at 2025-03-01T05:00:00Z", wantNext: t0.Add(3 * time.Hour),
		},
		"another request of the node may go: the budget is what holds it": {
			specs: map[string]v1alpha1.NodeMaintenanceSpec{"m": {Policy: "at5"}}, ids: []string{"m", "h"},
			status:     exhausted,
			wantReason: v1alpha1.BudgetExhaustedReason,
		},
		"ignoreWindows passes a shut window": {
			poolWindows: window("0 4 * * *"), specs: map[string]v1alpha1.NodeMaintenanceSpec{"m": {IgnoreWindows: true}}, ids: []string{"m"},
		},
		"a blocking query quoted from the pool": {
			ids: []string{"h"}, status: blocked(v1alpha1.BlockingQueryReason, `Blocking query "alerts" returns 1 series`),
			wantReason: v1alpha1.BlockingQueryReason, wantMessage: `pool p: Blocking query "alerts"`,
		},
		"windows come before a blocking query": {
			poolWindows: window("0 4 * * *"), ids: []string{"h"}, status: blocked(v1alpha1.BlockingQueryFailedReason, "unreachable"),
			wantReason: v1alpha1.OutsideWindowReason, wantNext: t0.Add(2 * time.Hour),
		},
		"canaries quoted from the pool's status": {
			ids: []string{"h"}, status: v1alpha1.MaintenancePoolStatus{MaxUnavailable: 3, Unavailable: 1, Nodes: 4, Updated: 3, Settling: 0,
				Canaries: &v1alpha1.CanaryStatus{Passed: 1, Want: 2}},
			wantReason: v1alpha1.CanariesReason, wantMessage: "1 of 2 run the new config",
		},
		"an unreadable policy window": {
			specs: map[string]v1alpha1.NodeMaintenanceSpec{"m": {Policy: "broken"}}, ids: []string{"m"},
			wantReason: v1alpha1.InvalidWindowReason, wantMessage: "RebootPolicy broken spec.windows[0]",
		},
		"a deleted policy adds no windows": {
			specs: map[string]v1alpha1.NodeMaintenanceSpec{"m": {Policy: "gone"}}, ids: []string{"m"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			pf := &poolFacts{names: tc.names, settings: pools.SettingsMap{}}
			for id, spec := range tc.specs {
				pf.settings[id] = pools.RequestSettings{IgnoreWindows: spec.IgnoreWindows, Policy: spec.Policy}
			}
			if pf.names == nil {
				pf.names = []string{"p"}
			}
			if !tc.noPool {
				if tc.status.MaxUnavailable == 0 {
					tc.status.MaxUnavailable = 1
				}
				pf.pool = &v1alpha1.MaintenancePool{
					ObjectMeta: metav1.ObjectMeta{Name: "p"},
					Spec:       v1alpha1.MaintenancePoolSpec{Windows: tc.poolWindows, Paused: tc.paused},
					Status:     tc.status,
				}
			}
			pf.windows = pools.NewWindows(t0, pf.pool, rebootPolicies)
			node := gen.Node("n", gen.BootID("boot-0"), gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, tc.ids...))
			got := waitOf(pf, read(node), time.Time{})
			g.Expect(got.reason).To(Equal(tc.wantReason), "reason (message %q)", got.message)
			g.Expect(got.message).To(ContainSubstring(tc.wantMessage))
			g.Expect(got.next).To(Equal(tc.wantNext))
		})
	}
}
