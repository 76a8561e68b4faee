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
