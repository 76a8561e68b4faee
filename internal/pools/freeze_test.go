package pools

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Freezes hold requests as closed windows do, whatever the windows say:
// only a request with ignoreFreezes passes them; ignoreWindows does not, nor
// does a request raised on the node (no NodeMaintenance settings).
func TestFreezesHoldRequests(t *testing.T) {
	ts := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: t0.Add(d)} }
	// The pool's window is 01:00-05:00 daily; its freeze 01:00-03:00 today,
	// so requests held by it may go at 03:00.
	pool := &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1alpha1.MaintenancePoolSpec{
		Windows: []v1alpha1.MaintenanceWindow{{Schedule: "0 1 * * *", Duration: metav1.Duration{Duration: 4 * time.Hour}}},
		Freezes: []v1alpha1.FreezePeriod{{Name: "release", Reason: "release day", Start: ts(-time.Hour), End: ts(time.Hour)}},
	}}
	// A policy frozen until 06:00: past the pool's window, so its requests
	// wait for the next day's window at 01:00.
	frozenPolicy := v1alpha1.RebootPolicy{ObjectMeta: metav1.ObjectMeta{Name: "kernel"}, Spec: v1alpha1.RebootPolicySpec{
		Freezes: []v1alpha1.FreezePeriod{{Name: "quiet", Start: ts(-time.Hour), End: ts(4 * time.Hour)}},
	}}
	brokenPolicy := v1alpha1.RebootPolicy{ObjectMeta: metav1.ObjectMeta{Name: "broken"}, Spec: v1alpha1.RebootPolicySpec{
		Freezes: []v1alpha1.FreezePeriod{{Name: "mars", Schedule: "0 0 * * 5", Duration: &metav1.Duration{Duration: time.Hour}, TimeZone: "Mars/Olympus"}},
	}}
	unfrozen := &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "q"}}
	settings := SettingsMap{
		"api":        {},
		"windowless": {IgnoreWindows: true},
		"emergency":  {IgnoreFreezes: true},
		"kernel":     {Policy: "kernel"},
		"kernel-ok":  {Policy: "kernel", IgnoreFreezes: true},
		"broken":     {Policy: "broken"},
		"broken-ok":  {Policy: "broken", IgnoreFreezes: true},
	}
	cases := map[string]struct {
		pool *v1alpha1.MaintenancePool
		// ids are the node's requests; ids not in settings are host requests.
		ids []string

		wantOpen       bool
		wantNext       time.Time
		wantFrozen     []string
		wantFreezeProb int
	}{
		"a host request waits out the pool's freeze": {
			pool: pool, ids: []string{"host"}, wantNext: t0.Add(time.Hour),
			wantFrozen: []string{"pool p's freeze release (release day) until 2025-03-01T03:00:00Z"},
		},
		"an API request too": {
			pool: pool, ids: []string{"api"}, wantNext: t0.Add(time.Hour), wantFrozen: []string{"pool p's freeze release (release day) until 2025-03-01T03:00:00Z"},
		},
		"ignoreWindows does not pass a freeze": {
			pool: pool, ids: []string{"windowless"}, wantNext: t0.Add(time.Hour), wantFrozen: []string{"pool p's freeze release (release day) until 2025-03-01T03:00:00Z"},
		},
		"ignoreFreezes passes it": {pool: pool, ids: []string{"emergency"}, wantOpen: true},
		"one request that passes is enough for the node": {
			pool: pool, ids: []string{"host", "emergency"}, wantOpen: true,
		},
		"a policy's freeze holds its requests, to the next window after it": {
			pool: unfrozen, ids: []string{"kernel"}, wantNext: t0.Add(4 * time.Hour),
			wantFrozen: []string{"RebootPolicy kernel's freeze quiet until 2025-03-01T06:00:00Z"},
		},
		"a policy freeze inside the pool's window waits for the next day's window": {
			pool: pool, ids: []string{"kernel"}, wantNext: t0.Add(23 * time.Hour),
			wantFrozen: []string{"pool p's freeze release (release day) until 2025-03-01T03:00:00Z"},
		},
		"a policy's freeze holds nothing else":   {pool: unfrozen, ids: []string{"api"}, wantOpen: true},
		"ignoreFreezes passes a policy's freeze": {pool: unfrozen, ids: []string{"kernel-ok"}, wantOpen: true},
		"a policy freeze that cannot be read holds its requests": {
			pool: unfrozen, ids: []string{"broken"}, wantFreezeProb: 1,
		},
		"ignoreFreezes passes even that": {pool: unfrozen, ids: []string{"broken-ok"}, wantOpen: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			wins := NewWindows(t0, tc.pool, []v1alpha1.RebootPolicy{frozenPolicy, brokenPolicy})
			g.Expect(wins.Freezes()).To(BeTrue())
			var reqs []protocol.Request
			for _, id := range tc.ids {
				reqs = append(reqs, protocol.Request{ID: id})
			}
			ww := wins.Node(reqs, settings)
			g.Expect(ww.Shut).To(Equal(!tc.wantOpen))
			g.Expect(ww.Next).To(BeTemporally("==", tc.wantNext))
			g.Expect(ww.Frozen).To(Equal(tc.wantFrozen))
			g.Expect(ww.FreezeProblems).To(HaveLen(tc.wantFreezeProb))
			g.Expect(ww.Closed).To(BeEmpty())
		})
	}
}

func TestPoolFreeze(t *testing.T) {
	g := NewWithT(t)
	pool := &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1alpha1.MaintenancePoolSpec{
		Freezes: []v1alpha1.FreezePeriod{{Name: "later", Start: &metav1.Time{Time: t0.Add(time.Hour)}, End: &metav1.Time{Time: t0.Add(2 * time.Hour)}}},
	}}
	st := NewWindows(t0, pool, nil).PoolFreeze()
	g.Expect(st.Frozen).To(BeFalse())
	g.Expect(st.Next).To(BeTemporally("==", t0.Add(time.Hour)))
	g.Expect(NewWindows(t0.Add(time.Hour), pool, nil).PoolFreeze().Frozen).To(BeTrue())

	pool.Spec.Freezes[0] = v1alpha1.FreezePeriod{Name: "bad", Schedule: "not cron", Duration: &metav1.Duration{Duration: time.Hour}}
	st = NewWindows(t0, pool, nil).PoolFreeze()
	g.Expect(st.Frozen).To(BeTrue())
	g.Expect(st.Err).To(MatchError(ContainSubstring(`freeze "bad" of pool p cannot be read`)))

	// The default pool and a pool without freezes have none.
	g.Expect(NewWindows(t0, nil, nil).Freezes()).To(BeFalse())
	g.Expect(NewWindows(t0, nil, nil).PoolFreeze().Frozen).To(BeFalse())
}
