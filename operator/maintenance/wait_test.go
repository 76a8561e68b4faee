package maintenance

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/operator/api/protocol"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/pools"
	"github.com/kmaint/kmaint/policies"
)

func TestWaitOf(t *testing.T) {
	window := func(schedule string) []v1alpha1.MaintenanceWindow {
		return []v1alpha1.MaintenanceWindow{{Schedule: schedule, Duration: metav1.Duration{Duration: time.Hour}}}
	}
	rebootPolicies := []v1alpha1.RebootPolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: "at5"}, Spec: v1alpha1.RebootPolicySpec{Windows: window("0 5 * * *")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "broken"}, Spec: v1alpha1.RebootPolicySpec{Windows: window("0 5 * *")}},
	}
	blocked := func(reason, message string) []metav1.Condition {
		return []metav1.Condition{{Type: poolBlocked, Status: metav1.ConditionTrue, Reason: reason, Message: message}}
	}
	cases := map[string]struct {
		// poolWindows and paused and conditions make the node's pool; no
		// pool at all when noPool.
		poolWindows []v1alpha1.MaintenanceWindow
		paused      bool
		conditions  []metav1.Condition
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
		"a node in two pools": {names: []string{"a", "b"}, ids: []string{"h"}, wantReason: ReasonConflicting, wantMessage: "a, b"},
		"paused":              {paused: true, ids: []string{"h"}, wantReason: ReasonPaused},
		"the pool's window shut": {
			poolWindows: window("0 4 * * *"), ids: []string{"h"},
			wantReason: ReasonOutsideWindow, wantMessage: "pool p; the next opens at 2025-03-01T04:00:00Z", wantNext: t0.Add(2 * time.Hour),
		},
		"the policy's window shut": {
			specs: map[string]v1alpha1.NodeMaintenanceSpec{"m": {Policy: "at5"}}, ids: []string{"m"},
			wantReason: ReasonOutsideWindow, wantMessage: "pool p and RebootPolicy at5; the next opens at 2025-03-01T05:00:00Z", wantNext: t0.Add(3 * time.Hour),
		},
		"another request of the node may go: the budget is what holds it": {
			specs: map[string]v1alpha1.NodeMaintenanceSpec{"m": {Policy: "at5"}}, ids: []string{"m", "h"},
			conditions: blocked(ReasonBudgetExhausted, "1 of 1 ..."),
			wantReason: ReasonBudgetExhausted,
		},
		"ignoreWindows passes a shut window": {
			poolWindows: window("0 4 * * *"), specs: map[string]v1alpha1.NodeMaintenanceSpec{"m": {IgnoreWindows: true}}, ids: []string{"m"},
		},
		"a blocking query quoted from the pool": {
			ids: []string{"h"}, conditions: blocked(ReasonBlockingQuery, `Blocking query "alerts" returns 1 series`),
			wantReason: ReasonBlockingQuery, wantMessage: `pool p: Blocking query "alerts"`,
		},
		"windows come before a blocking query": {
			poolWindows: window("0 4 * * *"), ids: []string{"h"}, conditions: blocked(ReasonBlockingQueryFailed, "unreachable"),
			wantReason: ReasonOutsideWindow, wantNext: t0.Add(2 * time.Hour),
		},
		"an unreadable policy window": {
			specs: map[string]v1alpha1.NodeMaintenanceSpec{"m": {Policy: "broken"}}, ids: []string{"m"},
			wantReason: ReasonInvalidWindow, wantMessage: "RebootPolicy broken spec.windows[0]",
		},
		"a deleted policy adds no windows": {
			specs: map[string]v1alpha1.NodeMaintenanceSpec{"m": {Policy: "gone"}}, ids: []string{"m"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			pf := &poolFacts{names: tc.names, requests: tc.specs}
			if pf.names == nil {
				pf.names = []string{"p"}
			}
			var parsed []policies.Window
			if !tc.noPool {
				pf.pool = &v1alpha1.MaintenancePool{
					ObjectMeta: metav1.ObjectMeta{Name: "p"},
					Spec:       v1alpha1.MaintenancePoolSpec{Windows: tc.poolWindows, Paused: tc.paused},
					Status:     v1alpha1.MaintenancePoolStatus{Conditions: tc.conditions, MaxUnavailable: 1},
				}
				var err error
				parsed, err = policies.ParseWindows(tc.poolWindows)
				g.Expect(err).NotTo(HaveOccurred())
			}
			pf.windows = pools.NewWindows(t0, parsed, rebootPolicies)
			requested := &protocol.Requested{BootID: "boot-0"}
			for _, id := range tc.ids {
				requested.Requests = append(requested.Requests, protocol.Request{ID: id, Source: v1alpha1.SourceAPI, Time: t0})
			}
			got := waitOf(pf, requested)
			g.Expect(got.reason).To(Equal(tc.wantReason), "reason (message %q)", got.message)
			g.Expect(got.message).To(ContainSubstring(tc.wantMessage))
			g.Expect(got.next).To(Equal(tc.wantNext))
		})
	}
}
