package statuspatch

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

func TestWritten(t *testing.T) {
	g := NewWithT(t)
	var w Written[*v1alpha1.RebootPolicyStatus]
	_, ok := w.Last("rp", "uid-1")
	g.Expect(ok).To(BeFalse(), "nothing written yet")
	g.Expect(w.Same("rp", "uid-1", &v1alpha1.RebootPolicyStatus{})).To(BeFalse(), "an unwritten status is never the same, even when empty")

	s := &v1alpha1.RebootPolicyStatus{WouldRequest: []string{"n1"}}
	w.Remember("rp", "uid-1", s)
	s.WouldRequest[0] = "changed after the write"
	last, ok := w.Last("rp", "uid-1")
	g.Expect(ok).To(BeTrue())
	g.Expect(last.WouldRequest).To(Equal([]string{"n1"}), "a copy is kept, not the caller's status")
	last.WouldRequest[0] = "changed by a reader"
	g.Expect(w.Same("rp", "uid-1", &v1alpha1.RebootPolicyStatus{WouldRequest: []string{"n1"}})).To(BeTrue(), "readers get a copy too")
	g.Expect(w.Same("rp", "uid-1", &v1alpha1.RebootPolicyStatus{WouldRequest: []string{"n2"}})).To(BeFalse())

	// Compared as the API server stores them: an empty list is no list.
	w.Remember("rp", "uid-1", &v1alpha1.RebootPolicyStatus{Candidates: []v1alpha1.Candidate{}})
	g.Expect(w.Same("rp", "uid-1", &v1alpha1.RebootPolicyStatus{})).To(BeTrue())

	_, ok = w.Last("rp", "uid-2")
	g.Expect(ok).To(BeFalse(), "a policy made again under the same name starts afresh")
	g.Expect(w.Same("rp", "uid-2", &v1alpha1.RebootPolicyStatus{})).To(BeFalse())

	w.Forget("rp")
	_, ok = w.Last("rp", "uid-1")
	g.Expect(ok).To(BeFalse(), "forgotten")

	// Any status type: a condition's time survives the copy.
	var pools Written[*v1alpha1.MaintenancePoolStatus]
	pool := &v1alpha1.MaintenancePoolStatus{Nodes: 3, Conditions: []metav1.Condition{{Type: "Blocked", LastTransitionTime: metav1.Now()}}}
	pools.Remember("p", "uid-p", pool)
	g.Expect(pools.Same("p", "uid-p", pool)).To(BeTrue())
	pool.Nodes = 4
	g.Expect(pools.Same("p", "uid-p", pool)).To(BeFalse())
}
