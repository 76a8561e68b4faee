package gate

import (
	"reflect"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// What a node's open NodeMaintenances say is kept while they are the same
// objects, and made again from a changed one.
func TestRequestSettingsFollowTheCachedObjects(t *testing.T) {
	g := NewWithT(t)
	s := newRequestSettings()
	nm := func(id string, ignoreWindows bool) *v1alpha1.NodeMaintenance {
		return &v1alpha1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: id}, Spec: v1alpha1.NodeMaintenanceSpec{NodeName: "n1", IgnoreWindows: ignoreWindows},
			Status: v1alpha1.NodeMaintenanceStatus{RequestID: id}}
	}
	a, b := nm("a", false), nm("b", false)
	first := s.of("n1", []*v1alpha1.NodeMaintenance{a, b})
	g.Expect(first).To(HaveLen(2))
	kept := s.of("n1", []*v1alpha1.NodeMaintenance{b, a})
	g.Expect(reflect.ValueOf(kept).Pointer()).To(Equal(reflect.ValueOf(first).Pointer()), "the same objects, in another order: kept")

	// The cache replaces an object that changed: the new one is read.
	changed := nm("a", true)
	again := s.of("n1", []*v1alpha1.NodeMaintenance{changed, b})
	g.Expect(again["a"].IgnoreWindows).To(BeTrue())
	g.Expect(s.of("n1", []*v1alpha1.NodeMaintenance{b})).To(HaveLen(1), "one closed")
	g.Expect(s.of("n1", nil)).To(BeNil())

	// Nodes gone are forgotten once more are kept than there are nodes.
	s.of("n1", []*v1alpha1.NodeMaintenance{a})
	s.of("n2", []*v1alpha1.NodeMaintenance{b})
	s.forgetGone([]*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}})
	g.Expect(s.byNode).To(HaveLen(1))
	g.Expect(s.byNode).To(HaveKey("n2"))
}
