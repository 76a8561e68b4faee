package gate

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/operator/api/protocol"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/pools"
	"github.com/kmaint/kmaint/policies"
	"github.com/kmaint/kmaint/test/gen"
)

func TestSetWindows(t *testing.T) {
	// t0 is 02:00 UTC: the pool's window (01:00-05:00) is open.
	pool, err := policies.ParseWindows([]v1alpha1.MaintenanceWindow{{Schedule: "0 1 * * *", Duration: metav1.Duration{Duration: 4 * time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	policy := func(name, schedule string) v1alpha1.RebootPolicy {
		return v1alpha1.RebootPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       v1alpha1.RebootPolicySpec{Windows: []v1alpha1.MaintenanceWindow{{Schedule: schedule, Duration: metav1.Duration{Duration: time.Hour}}}},
		}
	}
	wins := pools.NewWindows(t0, pool, []v1alpha1.RebootPolicy{
		policy("open", "30 1 * * *"),                        // 01:30-02:30
		policy("at3", "0 3 * * *"),                          // 03:00-04:00
		policy("at4", "0 4 * * *"),                          // 04:00-05:00
		policy("broken", "0 3 * *"),                         // unreadable
		policy("never", "0 12 * * *"),                       // never inside the pool's window
		{ObjectMeta: metav1.ObjectMeta{Name: "windowless"}}, // adds none
	})
	requests := map[string]requestInfo{
		"open": {policy: "open"}, "at3": {policy: "at3"}, "at4": {policy: "at4"}, "broken": {policy: "broken"},
		"never": {policy: "never"}, "windowless": {policy: "windowless"}, "gone": {policy: "deleted"},
		"emergency": {policy: "broken", ignoreWindows: true},
	}
	cases := map[string]struct {
		// ids are the node's requests; ids not in requests are host requests.
		ids []string

		wantOpen     bool
		wantNext     time.Time
		wantProblems int
	}{
		"a host request follows the pool":                  {ids: []string{"host"}, wantOpen: true},
		"a policy window open too":                         {ids: []string{"open"}, wantOpen: true},
		"a policy window shut: its opening":                {ids: []string{"at3"}, wantNext: t0.Add(time.Hour)},
		"several shut: the earliest opening":               {ids: []string{"at4", "at3"}, wantNext: t0.Add(time.Hour)},
		"one request that may go takes the node":           {ids: []string{"at3", "host"}, wantOpen: true},
		"an unreadable policy window admits nothing":       {ids: []string{"broken"}, wantProblems: 1},
		"an unreadable one does not hold back another":     {ids: []string{"broken", "open"}, wantOpen: true},
		"windows that never meet: no opening known":        {ids: []string{"never"}},
		"a policy without windows adds none":               {ids: []string{"windowless"}, wantOpen: true},
		"a deleted policy adds none":                       {ids: []string{"gone"}, wantOpen: true},
		"ignoreWindows passes whatever its policy says":    {ids: []string{"emergency"}, wantOpen: true},
		"problems and openings are both kept for a person": {ids: []string{"broken", "at4"}, wantNext: t0.Add(2 * time.Hour), wantProblems: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var reqs []protocol.Request
			for i, id := range tc.ids {
				reqs = append(reqs, req(id, time.Duration(i)*time.Minute))
			}
			v := newNodeView(gen.Node("n", requestsNow(reqs...)))
			setWindows(&v, wins, requests)
			g.Expect(v.windowOpen).To(Equal(tc.wantOpen), "windowOpen")
			g.Expect(v.nextOpening).To(Equal(tc.wantNext), "nextOpening")
			g.Expect(v.windowProblems).To(HaveLen(tc.wantProblems), "windowProblems")
		})
	}
}
