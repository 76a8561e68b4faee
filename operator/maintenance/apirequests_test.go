package maintenance

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

func TestAPIRequestsFor(t *testing.T) {
	nm := func(uid string, source v1alpha1.Source, phase v1alpha1.Phase) v1alpha1.NodeMaintenance {
		return v1alpha1.NodeMaintenance{
			ObjectMeta: metav1.ObjectMeta{Name: "nm-" + uid, UID: types.UID(uid)},
			Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: "n1", Source: source},
			Status:     v1alpha1.NodeMaintenanceStatus{Phase: phase},
		}
	}
	deleting := nm("deleting", v1alpha1.SourceAPI, v1alpha1.PhaseRequested)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	items := []v1alpha1.NodeMaintenance{
		nm("new", v1alpha1.SourceAPI, ""),
		nm("pending", v1alpha1.SourceSchedule, v1alpha1.PhasePending),
		nm("draining", v1alpha1.SourceMetric, v1alpha1.PhaseDraining),
		nm("succeeded", v1alpha1.SourceAPI, v1alpha1.PhaseSucceeded),
		nm("duplicate", v1alpha1.SourceAPI, v1alpha1.PhaseFailed),
		nm("drain-failed", v1alpha1.SourceAPI, v1alpha1.PhaseFailed),
		nm("host", v1alpha1.SourceHost, v1alpha1.PhaseRequested),
		nm("config", v1alpha1.SourceConfig, v1alpha1.PhasePending),
		deleting,
	}
	node := gen.Node("n1", gen.BootID("boot-a"), gen.RequestedIDs("boot-a", v1alpha1.SourceAPI, t0, "drain-failed", "draining"))

	g := NewWithT(t)
	g.Expect(apiRequestsFor(items, read(node))).To(Equal([]protocol.APIRequest{
		{Name: "nm-new", UID: "new"},
		{Name: "nm-pending", UID: "pending"},
		{Name: "nm-draining", UID: "draining"},
		{Name: "nm-drain-failed", UID: "drain-failed"},
	}), "open requests that start in the API, and a failed one the node still shows raised; never one raised on the node or being deleted")
	g.Expect(apiRequestsFor(nil, read(node))).To(Equal([]protocol.APIRequest{}), "none is an empty list, not null")
}

func TestNeedsAPIRequestsWrite(t *testing.T) {
	a := protocol.APIRequest{Name: "nm-a", UID: "a"}
	b := protocol.APIRequest{Name: "nm-b", UID: "b"}
	live := func(uids ...types.UID) map[types.UID]bool {
		m := map[types.UID]bool{}
		for _, u := range uids {
			m[u] = true
		}
		return m
	}
	cases := map[string]struct {
		have       []protocol.APIRequest
		known      bool
		unreadable bool
		want       []protocol.APIRequest
		live       map[types.UID]bool
		write      bool
	}{
		"nothing named and nothing to name: no annotation":                {want: []protocol.APIRequest{}, write: false},
		"a first request: named":                                          {want: []protocol.APIRequest{a}, live: live("a"), write: true},
		"named already: no write":                                         {have: []protocol.APIRequest{a}, known: true, want: []protocol.APIRequest{a}, live: live("a")},
		"a new request beside one named: written":                         {have: []protocol.APIRequest{a}, known: true, want: []protocol.APIRequest{a, b}, live: live("a", "b"), write: true},
		"a named request that finished: left until the next write":        {have: []protocol.APIRequest{a}, known: true, want: []protocol.APIRequest{}, live: live("a")},
		"a named request deleted: written at once, the daemon cancels it": {have: []protocol.APIRequest{a, b}, known: true, want: []protocol.APIRequest{b}, live: live("b"), write: true},
		"a named request being deleted (not live): written at once":       {have: []protocol.APIRequest{a}, known: true, want: []protocol.APIRequest{}, live: live(), write: true},
		"a name reused by a new request: the new UID is named":            {have: []protocol.APIRequest{a}, known: true, want: []protocol.APIRequest{{Name: "nm-a", UID: "a2"}}, live: live("a2"), write: true},
		"unreadable: replaced, even by an empty list":                     {unreadable: true, want: []protocol.APIRequest{}, write: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(needsAPIRequestsWrite(c.have, c.known, c.unreadable, c.want, c.live)).To(Equal(c.write))
		})
	}
}
