package maintenance

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

func writtenRecord(node, name, uid, rv string, phase v1alpha1.Phase) *v1alpha1.NodeMaintenance {
	return &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), ResourceVersion: rv},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: node},
		Status:     v1alpha1.NodeMaintenanceStatus{Phase: phase},
	}
}

func uidOf(s string) string { return s }

// A write is read in place of the cache's older copy until the cache shows
// it, and is dropped the moment the cache's watch shows it, whether or not
// its node is reconciled again: a rollout of thousands of nodes kept a
// second copy of most waiting records otherwise.
func TestAWriteIsKeptUntilTheCacheShowsIt(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	w := newWritten()
	w.remember(writtenRecord("n1", "a", "1", "20", v1alpha1.PhaseRebooting), now)
	w.remember(writtenRecord("n2", "b", "2", "21", v1alpha1.PhaseRequested), now)
	g.Expect(w.kept()).To(Equal(2))

	cached := []v1alpha1.NodeMaintenance{*writtenRecord("n1", "a", "1", "10", v1alpha1.PhaseApproved)}
	items := w.overlay("n1", cached, now)
	g.Expect(items).To(HaveLen(1), "the other node's write is not this node's")
	g.Expect(items[0].Status.Phase).To(Equal(v1alpha1.PhaseRebooting), "the write, not the cache's older copy")

	w.seen(writtenRecord("n1", "a", "1", "10", v1alpha1.PhaseApproved))
	g.Expect(w.kept()).To(Equal(2), "an older version than the write leaves the copy")
	w.seen(writtenRecord("n1", "a", "1", "20", v1alpha1.PhaseRebooting))
	g.Expect(w.kept()).To(Equal(1), "the cache at the write drops the copy")
	w.seen(writtenRecord("n2", "b", "other", "5", v1alpha1.PhaseRequested))
	g.Expect(w.kept()).To(Equal(0), "another object of the name drops the copy")

	cached = []v1alpha1.NodeMaintenance{*writtenRecord("n1", "a", "1", "10", v1alpha1.PhaseApproved)}
	items = w.overlay("n1", cached, now)
	g.Expect(items[0].Status.Phase).To(Equal(v1alpha1.PhaseApproved), "with no copy, the cache is read")
}

// A created record the cache does not show yet is listed with its node's;
// a copy whose object the cache never shows goes after writtenTTL, even
// when its node is never reconciled again.
func TestACreatedRecordIsListedUntilTheCacheShowsItOrItsTimeIsUp(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	w := newWritten()
	w.remember(writtenRecord("n1", "new", "1", "30", v1alpha1.PhasePending), now)
	items := w.overlay("n1", nil, now.Add(time.Second))
	g.Expect(items).To(HaveLen(1))
	g.Expect(items[0].Name).To(Equal("new"))
	g.Expect(w.overlay("n2", nil, now)).To(BeEmpty())

	w.remember(writtenRecord("n2", "other", "2", "31", v1alpha1.PhasePending), now.Add(writtenTTL+time.Second))
	g.Expect(w.kept()).To(Equal(1), "the first copy's time is up: swept when another is kept")
	g.Expect(w.overlay("n1", nil, now.Add(writtenTTL+time.Second))).To(BeEmpty())

	w.forget("n2", "other")
	g.Expect(w.kept()).To(Equal(0))
}
