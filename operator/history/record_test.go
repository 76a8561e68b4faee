package history

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// A Record keeps what retention, the policies and the recording of requests
// read of a finished NodeMaintenance, and nothing only a person reads.
func TestARecordKeepsWhatTheOperatorReads(t *testing.T) {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	nm := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "u", ResourceVersion: "7", CreationTimestamp: now,
			Labels:        map[string]string{v1alpha1.BootIDLabel: "b", v1alpha1.RequestIDLabel: "id", v1alpha1.PolicyLabel: "p"},
			Annotations:   map[string]string{v1alpha1.ValueAnnotation: "0.93", "note": "from a person"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kmaint"}}},
		Spec: v1alpha1.NodeMaintenanceSpec{NodeName: "n", Source: v1alpha1.SourceSchedule, Policy: "p", Reason: "kernel", Type: v1alpha1.RebootMaintenance},
		Status: v1alpha1.NodeMaintenanceStatus{
			Phase: v1alpha1.PhaseSucceeded, BootIDBefore: "b", JournaledBootID: "b", JournaledTime: &now, BootIDAfter: "c",
			Message:    "rebooted after 3m",
			PhaseTimes: v1alpha1.PhaseTimes{Pending: &now, Approved: &now, Rebooting: &now, Succeeded: &now},
			Conditions: []metav1.Condition{{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionTrue, Reason: "Rebooted"}},
		},
	}
	var got v1alpha1.NodeMaintenance
	newRecord(nm, same).Into(&got)
	if got.UID != "u" || got.ResourceVersion != "7" || !got.CreationTimestamp.Equal(&now) ||
		got.Spec.NodeName != "n" || got.Spec.Source != v1alpha1.SourceSchedule || got.Spec.Policy != "p" ||
		got.Status.Phase != v1alpha1.PhaseSucceeded || got.Status.PhaseTimes.Succeeded == nil || !got.Status.PhaseTimes.Succeeded.Equal(&now) ||
		got.RequestID() != "id" || got.Labels[v1alpha1.BootIDLabel] != "b" || got.Annotations[v1alpha1.ValueAnnotation] != "0.93" ||
		got.Unreadable() != nil || got.Kind != "NodeMaintenance" {
		t.Errorf("a finished record lost what retention, policies and recording read: %+v", got)
	}
	if got.ManagedFields != nil || got.Spec.Reason != "" || got.Spec.Type != "" || got.Status.Message != "" || got.Status.Conditions != nil ||
		got.Annotations["note"] != "" || got.Status.BootIDAfter != "" || got.Status.JournaledTime != nil ||
		got.Status.PhaseTimes.Pending != nil || got.Status.PhaseTimes.Approved != nil || got.Status.PhaseTimes.Failed != nil {
		t.Errorf("a finished record keeps what the operator never reads of it: %+v", got)
	}
}

// A record keeps its UID, request id and boot label as they were, UUIDs in
// their canonical form compactly and any other string as it is: uppercase,
// braced, the nil UUID, not a UUID, empty.
func TestARecordGivesBackItsIDsExactly(t *testing.T) {
	for _, id := range []string{"", "0b6a6c8e-3f5e-4c1e-9a43-2f1d2c3b4a5e", "0B6A6C8E-3F5E-4C1E-9A43-2F1D2C3B4A5E",
		"{0b6a6c8e-3f5e-4c1e-9a43-2f1d2c3b4a5e}", "urn:uuid:0b6a6c8e-3f5e-4c1e-9a43-2f1d2c3b4a5e",
		"00000000-0000-0000-0000-000000000000", "0b6a6c8e3f5e4c1e9a432f1d2c3b4a5e", "req-1", "b"} {
		other := "7d1c1f7a-54b0-4d7f-8d9b-5f3c2e1a0b9c"
		for _, ids := range [][3]string{{id, other, other}, {other, id, other}, {other, other, id}} {
			nm := &v1alpha1.NodeMaintenance{
				ObjectMeta: metav1.ObjectMeta{Name: "r", UID: types.UID(ids[0]), Labels: map[string]string{v1alpha1.BootIDLabel: ids[2]}},
				Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: "n", Source: v1alpha1.SourceSchedule},
				Status:     v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseSucceeded, RequestID: ids[1]},
			}
			var got v1alpha1.NodeMaintenance
			newRecord(nm, same).Into(&got)
			if string(got.UID) != ids[0] || got.RequestID() != nm.RequestID() || got.Labels[v1alpha1.BootIDLabel] != ids[2] {
				t.Errorf("ids %q (request id %q) came back as %q, %q, %q", ids, nm.RequestID(), got.UID, got.RequestID(), got.Labels[v1alpha1.BootIDLabel])
			}
		}
	}
}
