package statuspatch

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// twoWriters is a pool whose status two controllers write: one its counts and
// conditions A, the other settling, halt and condition B.
func twoWriters() (*v1alpha1.MaintenancePool, Apply, Apply) {
	pool := &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1", ResourceVersion: "42"}}
	pool.Status.Nodes, pool.Status.Settling = 3, 1
	pool.Status.Halt = &v1alpha1.PoolHalt{Resume: v1alpha1.ResumeManual}
	for _, c := range []string{"A", "B"} {
		meta.SetStatusCondition(&pool.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: "R"})
	}
	kind := v1alpha1.GroupVersion.WithKind("MaintenancePool")
	return pool, Apply{Kind: kind, Leave: []string{"settling", "halt"}, Conditions: []string{"A"}},
		Apply{Kind: kind, Fields: []string{"settling", "halt"}, Conditions: []string{"B"}, Lock: true}
}

func TestApplyWritesOnlyItsPart(t *testing.T) {
	g := NewWithT(t)
	pool, gate, aftercare := twoWriters()
	var got struct {
		APIVersion, Kind string
		Metadata         map[string]any
		Status           map[string]any
	}
	data, err := gate.Data(pool)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(json.Unmarshal(data, &got)).To(Succeed())
	g.Expect(got.APIVersion).To(Equal("kmaint.io/v1alpha1"))
	g.Expect(got.Kind).To(Equal("MaintenancePool"))
	g.Expect(got.Metadata).To(Equal(map[string]any{"name": "p", "uid": "u1"}), "no lock: an apply needs none")
	g.Expect(got.Status).To(HaveKeyWithValue("nodes", BeNumerically("==", 3)))
	g.Expect(got.Status).To(HaveKeyWithValue("unavailable", BeNumerically("==", 0)), "a zero count is applied, not left out")
	g.Expect(got.Status).NotTo(Or(HaveKey("settling"), HaveKey("halt")))
	g.Expect(got.Status["conditions"]).To(ConsistOf(HaveKeyWithValue("type", "A")))

	data, err = aftercare.Data(pool)
	g.Expect(err).NotTo(HaveOccurred())
	got.Metadata, got.Status = nil, nil
	g.Expect(json.Unmarshal(data, &got)).To(Succeed())
	g.Expect(got.Metadata).To(HaveKeyWithValue("resourceVersion", "42"), "locked")
	g.Expect(got.Status).To(HaveLen(3))
	g.Expect(got.Status).To(And(HaveKey("settling"), HaveKey("halt")))
	g.Expect(got.Status["conditions"]).To(ConsistOf(HaveKeyWithValue("type", "B")))

	// None of its conditions: none applied, so the API server removes
	// those it applied before.
	meta.RemoveStatusCondition(&pool.Status.Conditions, "A")
	part, err := gate.Part(pool)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(part).NotTo(HaveKey("conditions"))
}

// What is of a controller's part, stored but not applied (an earlier
// writer's), is removed, each removal tested against what it removes;
// the other controller's part is not touched.
func TestLeftoversRemoveOnlyWhatTheApplyLeftOut(t *testing.T) {
	g := NewWithT(t)
	stored, gate, aftercare := twoWriters()
	stored.Status.BlockingQuery = &v1alpha1.BlockingQueryStatus{Name: "q"}
	meta.SetStatusCondition(&stored.Status.Conditions, metav1.Condition{Type: "A2", Status: metav1.ConditionTrue, Reason: "R"})
	gate.Conditions = append(gate.Conditions, "A2")

	want := stored.DeepCopy()
	want.Status.BlockingQuery = nil
	meta.RemoveStatusCondition(&want.Status.Conditions, "A2")
	applied, err := gate.Part(want)
	g.Expect(err).NotTo(HaveOccurred())
	patch, err := gate.Leftovers(stored, applied)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(patch).NotTo(BeNil())
	data, err := patch.Data(stored)
	g.Expect(err).NotTo(HaveOccurred())
	var ops []map[string]any
	g.Expect(json.Unmarshal(data, &ops)).To(Succeed())
	g.Expect(ops).To(Equal([]map[string]any{
		{"op": "test", "path": "/status/blockingQuery", "value": map[string]any{"name": "q", "reason": "", "lastEvaluationTime": nil}},
		{"op": "remove", "path": "/status/blockingQuery"},
		{"op": "test", "path": "/status/conditions/2/type", "value": "A2"},
		{"op": "remove", "path": "/status/conditions/2"},
	}))

	// Nothing left over: no patch. The halt and B are the other's.
	applied, err = gate.Part(stored)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gate.Leftovers(stored, applied)).To(BeNil())
	applied, err = aftercare.Part(stored)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(aftercare.Leftovers(stored, applied)).To(BeNil())
}
