package pools

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// A request's settings are its node's: node a's daemon, whose token may
// read node b's api-requests, names b's emergency request in its own
// request, and is held by the freeze all the same; b's passes it.
func TestSettingsAreTheRequestsNodes(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	emergency := v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: "emergency", UID: "uid-b"},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: "b", Reason: "CVE", IgnoreFreezes: true},
	}
	done := v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: "done", UID: "uid-done"},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: "a", IgnoreFreezes: true},
		Status:     v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseSucceeded},
	}
	settings := Settings([]v1alpha1.NodeMaintenance{emergency, done})
	id := emergency.RequestID()
	g.Expect(settings["b"]).To(HaveKeyWithValue(id, RequestSettings{IgnoreFreezes: true, Recorded: emergency.CreationTimestamp.Time}))
	g.Expect(settings).NotTo(HaveKey("a"), "a's only NodeMaintenance is done")

	frozen := &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "p"}, Spec: v1alpha1.MaintenancePoolSpec{
		Freezes: []v1alpha1.FreezePeriod{{Name: "holidays", Schedule: "0 0 * * *", Duration: &metav1.Duration{Duration: 24 * time.Hour}}},
	}}
	wins := NewWindows(t0, frozen, nil)
	borrowed := []protocol.Request{{ID: id, Source: v1alpha1.SourceAPI, Time: t0}}
	g.Expect(wins.Node(borrowed, settings["a"]).Shut).To(BeTrue(), "node a, naming b's request, is frozen")
	g.Expect(wins.Node(borrowed, settings["b"]).Shut).To(BeFalse(), "node b's own request passes the freeze")
}

// A node's settings as a list (NodeSettings, which the gate keeps) find
// what the map of every node's (Settings) finds, for every request id: the
// last of two records of one id counts in both, and finished records in
// neither.
func TestNodeSettingsFindWhatSettingsFind(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	nm := func(name, id string, ignoreWindows bool, phase v1alpha1.Phase) v1alpha1.NodeMaintenance {
		return v1alpha1.NodeMaintenance{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0)},
			Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: "n", IgnoreWindows: ignoreWindows, Policy: name},
			Status:     v1alpha1.NodeMaintenanceStatus{RequestID: id, Phase: phase},
		}
	}
	items := []v1alpha1.NodeMaintenance{nm("a", "r1", false, ""), nm("b", "r2", true, v1alpha1.PhaseRequested),
		nm("c", "r1", true, ""), nm("d", "r3", true, v1alpha1.PhaseSucceeded)}
	var open []*v1alpha1.NodeMaintenance
	for i := range items {
		open = append(open, &items[i])
	}
	list, all := NodeSettings(open), Settings(items)["n"]
	g.Expect(list).To(HaveLen(len(all)))
	for _, id := range []string{"r1", "r2", "r3", "none"} {
		got, found := list.Lookup(id)
		want, wantFound := all.Lookup(id)
		g.Expect(found).To(Equal(wantFound), id)
		g.Expect(got).To(Equal(want), id)
	}
	got, _ := list.Lookup("r1")
	g.Expect(got.Policy).To(Equal("c"), "the last record of an id counts")
	g.Expect(NodeSettings(nil)).To(BeNil())
}
