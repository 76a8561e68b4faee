package pools

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// t0 is 02:00 UTC: the pool's window (01:00-05:00) is open.
var t0 = time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC)

func TestWindowsNode(t *testing.T) {
	window := func(schedule string, d time.Duration) []v1alpha1.MaintenanceWindow {
		return []v1alpha1.MaintenanceWindow{{Schedule: schedule, Duration: metav1.Duration{Duration: d}}}
	}
	pool := &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1alpha1.MaintenancePoolSpec{Windows: window("0 1 * * *", 4*time.Hour)}}
	policy := func(name, schedule string) v1alpha1.RebootPolicy {
		return v1alpha1.RebootPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.RebootPolicySpec{Windows: window(schedule, time.Hour)}}
	}
	wins := NewWindows(t0, pool, []v1alpha1.RebootPolicy{
		policy("open", "30 1 * * *"),                        // 01:30-02:30
		policy("at3", "0 3 * * *"),                          // 03:00-04:00
		policy("at4", "0 4 * * *"),                          // 04:00-05:00
		policy("broken", "0 3 * *"),                         // unreadable
		policy("never", "0 12 * * *"),                       // never inside the pool's window
		{ObjectMeta: metav1.ObjectMeta{Name: "windowless"}}, // adds none
	})
	settings := SettingsMap{
		"open": {Policy: "open"}, "at3": {Policy: "at3"}, "at4": {Policy: "at4"}, "broken": {Policy: "broken"},
		"never": {Policy: "never"}, "windowless": {Policy: "windowless"}, "gone": {Policy: "deleted"},
		"emergency": {Policy: "broken", IgnoreWindows: true},
	}
	cases := map[string]struct {
		// ids are the node's requests; ids not in settings are host requests.
		ids []string

		wantOpen     bool
		wantNext     time.Time
		wantProblems int
		// wantClosed names whose windows hold the node.
		wantClosed []string
	}{
		"a host request follows the pool":                  {ids: []string{"host"}, wantOpen: true},
		"a policy window open too":                         {ids: []string{"open"}, wantOpen: true},
		"a policy window shut: its opening":                {ids: []string{"at3"}, wantNext: t0.Add(time.Hour), wantClosed: []string{"pool p and RebootPolicy at3"}},
		"several shut: the earliest opening":               {ids: []string{"at4", "at3"}, wantNext: t0.Add(time.Hour), wantClosed: []string{"pool p and RebootPolicy at4", "pool p and RebootPolicy at3"}},
		"one request that may go takes the node":           {ids: []string{"at3", "host"}, wantOpen: true},
		"an unreadable policy window admits nothing":       {ids: []string{"broken"}, wantProblems: 1},
		"an unreadable one does not hold back another":     {ids: []string{"broken", "open"}, wantOpen: true},
		"windows that never meet: no opening known":        {ids: []string{"never"}, wantClosed: []string{"pool p and RebootPolicy never"}},
		"a policy without windows adds none":               {ids: []string{"windowless"}, wantOpen: true},
		"a deleted policy adds none":                       {ids: []string{"gone"}, wantOpen: true},
		"ignoreWindows passes whatever its policy says":    {ids: []string{"emergency"}, wantOpen: true},
		"problems and openings are both kept for a person": {ids: []string{"broken", "at4"}, wantNext: t0.Add(2 * time.Hour), wantProblems: 1, wantClosed: []string{"pool p and RebootPolicy at4"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var reqs []protocol.Request
			for i, id := range tc.ids {
				reqs = append(reqs, protocol.Request{ID: id, Source: v1alpha1.SourceHost, Time: t0.Add(time.Duration(i) * time.Minute)})
			}
			got := wins.Node(reqs, settings)
			g.Expect(!got.Shut).To(Equal(tc.wantOpen), "open")
			g.Expect(got.Next).To(Equal(tc.wantNext), "next opening")
			g.Expect(got.Problems).To(HaveLen(tc.wantProblems), "problems")
			g.Expect(got.Closed).To(Equal(tc.wantClosed), "closed")
		})
	}
}

func TestWindowsPool(t *testing.T) {
	g := NewWithT(t)
	broken := &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: v1alpha1.MaintenancePoolSpec{
		Windows: []v1alpha1.MaintenanceWindow{{Schedule: "61 * * * *", Duration: metav1.Duration{Duration: time.Hour}}}}}
	w := NewWindows(t0, broken, nil)
	g.Expect(w.PoolErr()).To(MatchError(ContainSubstring("spec.windows[0]")), "the error names the field")
	g.Expect(w.Pool().Open).To(BeFalse(), "an unreadable window is not taken for an open one")
	g.Expect(w.Node([]protocol.Request{{ID: "h"}}, nil).Shut).To(BeTrue(), "nor does a request pass it")

	g.Expect(NewWindows(t0, nil, nil).Pool().Open).To(BeTrue(), "the default pool without an object has no windows")
}

// Without windows or freezes anywhere, every request is open at every
// moment: the gate keeps what windows say of a node. Any window or freeze,
// the pool's or a policy's, or a pool's that cannot be read, makes time
// matter.
func TestWindowsTimeless(t *testing.T) {
	g := NewWithT(t)
	bare := &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	reqs := []protocol.Request{{ID: "a", Source: v1alpha1.SourceAPI, Time: t0}, {ID: "h", Source: v1alpha1.SourceHost, Time: t0}}
	settings := SettingsMap{"a": {Policy: "windowless"}}
	windowless := v1alpha1.RebootPolicy{ObjectMeta: metav1.ObjectMeta{Name: "windowless"}}
	for _, pool := range []*v1alpha1.MaintenancePool{nil, bare} {
		wins := NewWindows(t0, pool, []v1alpha1.RebootPolicy{windowless})
		g.Expect(wins.Timeless()).To(BeTrue())
		for _, at := range []time.Time{t0, t0.Add(7 * time.Hour), t0.Add(-300 * 24 * time.Hour)} {
			g.Expect(NewWindows(at, pool, []v1alpha1.RebootPolicy{windowless}).Node(reqs, settings)).To(BeZero(), "open at %s", at)
		}
	}

	window := []v1alpha1.MaintenanceWindow{{Schedule: "0 1 * * *", Duration: metav1.Duration{Duration: time.Hour}}}
	start, end := metav1.NewTime(t0), metav1.NewTime(t0.Add(time.Hour))
	freeze := []v1alpha1.FreezePeriod{{Name: "quiet", Start: &start, End: &end}}
	timed := map[string]*Windows{
		"pool windows": NewWindows(t0, &v1alpha1.MaintenancePool{Spec: v1alpha1.MaintenancePoolSpec{Windows: window}}, nil),
		"pool freezes": NewWindows(t0, &v1alpha1.MaintenancePool{Spec: v1alpha1.MaintenancePoolSpec{Freezes: freeze}}, nil),
		"pool windows that cannot be read": NewWindows(t0, &v1alpha1.MaintenancePool{Spec: v1alpha1.MaintenancePoolSpec{
			Windows: []v1alpha1.MaintenanceWindow{{Schedule: "61 * * * *", Duration: metav1.Duration{Duration: time.Hour}}}}}, nil),
		"a policy's windows": NewWindows(t0, bare, []v1alpha1.RebootPolicy{{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: v1alpha1.RebootPolicySpec{Windows: window}}}),
		"a policy's freezes": NewWindows(t0, bare, []v1alpha1.RebootPolicy{{ObjectMeta: metav1.ObjectMeta{Name: "f"}, Spec: v1alpha1.RebootPolicySpec{Freezes: freeze}}}),
	}
	for name, wins := range timed {
		g.Expect(wins.Timeless()).To(BeFalse(), name)
	}
}
