package requestsettings

import (
	"reflect"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
)

// What a node's open NodeMaintenances say is kept while the node's
// requests are the same record and none of its NodeMaintenances changed;
// a find that raced a change is not kept.
func TestRequestSettingsAreFoundAgainWhenTheirObjectsChange(t *testing.T) {
	g := NewWithT(t)
	s := New()
	nm := func(id string, ignoreWindows bool) *v1alpha1.NodeMaintenance {
		return &v1alpha1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: id}, Spec: v1alpha1.NodeMaintenanceSpec{NodeName: "n1", IgnoreWindows: ignoreWindows},
			Status: v1alpha1.NodeMaintenanceStatus{RequestID: id}}
	}
	open := []*v1alpha1.NodeMaintenance{nm("a", false), nm("b", false)}
	finds := 0
	find := func() ([]*v1alpha1.NodeMaintenance, error) { finds++; return open, nil }
	of := func(req *protocol.Requested) pools.SettingsList {
		got, err := s.Of("n1", req, find)
		g.Expect(err).NotTo(HaveOccurred())
		return got
	}
	req := &protocol.Requested{BootID: "b0"}
	first := of(req)
	g.Expect(first).To(HaveLen(2))
	g.Expect(reflect.ValueOf(of(req)).Pointer()).To(Equal(reflect.ValueOf(first).Pointer()), "kept")
	g.Expect(finds).To(Equal(1), "kept without a look at the cache")

	// The node changed (another record), its NodeMaintenances did not:
	// found, and the same settings.
	again := of(&protocol.Requested{BootID: "b0"})
	g.Expect(finds).To(Equal(2))
	g.Expect(reflect.ValueOf(again).Pointer()).To(Equal(reflect.ValueOf(first).Pointer()))

	// One of its NodeMaintenances changed: the cache holds a new object.
	open = []*v1alpha1.NodeMaintenance{nm("a", true), open[1]}
	s.Changed("n1")
	a, _ := of(req).Lookup("a")
	g.Expect(a.IgnoreWindows).To(BeTrue())

	// A change while a find runs: what it found is not kept.
	raced := false
	racing := func() ([]*v1alpha1.NodeMaintenance, error) { raced = true; s.Changed("n1"); return open, nil }
	s.Changed("n1")
	_, err := s.Of("n1", req, racing)
	g.Expect(raced).To(BeTrue())
	g.Expect(err).NotTo(HaveOccurred())
	before := finds
	of(req)
	g.Expect(finds).To(Equal(before+1), "found again after a find that raced a change")

	// A NodeMaintenance that cannot be read (its node unknown) forgets
	// every node's.
	before = finds
	s.Changed("")
	of(req)
	g.Expect(finds).To(Equal(before + 1))

	// Nodes gone are forgotten once more are kept than there are nodes.
	s.Changed("n2")
	s.ForgetGone([]*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}})
	g.Expect(s.byNode).To(HaveLen(1))
	g.Expect(s.byNode).To(HaveKey("n2"))
}
