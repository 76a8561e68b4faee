package poolstatus

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

func TestStatusPaceHoldsBackOnlyCounts(t *testing.T) {
	now := time.Now()
	base := func() *v1alpha1.MaintenancePoolStatus {
		return &v1alpha1.MaintenancePoolStatus{Nodes: 10, Unavailable: 1, Conditions: []metav1.Condition{
			{Type: v1alpha1.BlockedCondition, Status: metav1.ConditionFalse, Reason: "NotBlocked", Message: "1 of 2 unavailable"}}}
	}
	p := newPace()
	if w := p.wait("u", base(), base(), time.Second, now); w != 0 {
		t.Fatalf("the first write waits %s", w)
	}
	p.wrote("u", now)

	counts := base()
	counts.Unavailable, counts.Conditions[0].Message = 2, "2 of 2 unavailable"
	if w := p.wait("u", base(), counts, time.Second, now.Add(300*time.Millisecond)); w != 700*time.Millisecond {
		t.Errorf("a change of counts 300ms after a write waits %s, want 700ms", w)
	}
	if w := p.wait("u", base(), counts, time.Second, now.Add(time.Second)); w != 0 {
		t.Errorf("a change of counts a second after a write waits %s", w)
	}
	if w := p.wait("other", base(), counts, time.Second, now); w != 0 {
		t.Errorf("another pool's write holds this one back %s", w)
	}

	for name, change := range map[string]func(s *v1alpha1.MaintenancePoolStatus){
		"condition status": func(s *v1alpha1.MaintenancePoolStatus) { s.Conditions[0].Status = metav1.ConditionTrue },
		"condition reason": func(s *v1alpha1.MaintenancePoolStatus) { s.Conditions[0].Reason = v1alpha1.HaltedReason },
		"new condition": func(s *v1alpha1.MaintenancePoolStatus) {
			s.Conditions = append(s.Conditions, metav1.Condition{Type: v1alpha1.HaltedCondition})
		},
		"halt":          func(s *v1alpha1.MaintenancePoolStatus) { s.Halt = &v1alpha1.PoolHalt{} },
		"freeze":        func(s *v1alpha1.MaintenancePoolStatus) { s.Freeze = &v1alpha1.ActiveFreeze{Name: "f"} },
		"generation":    func(s *v1alpha1.MaintenancePoolStatus) { s.ObservedGeneration++ },
		"budget":        func(s *v1alpha1.MaintenancePoolStatus) { s.MaxUnavailable++ },
		"blockingQuery": func(s *v1alpha1.MaintenancePoolStatus) { s.BlockingQuery = &v1alpha1.BlockingQueryStatus{} },
	} {
		after := base()
		change(after)
		if w := p.wait("u", base(), after, time.Second, now.Add(time.Millisecond)); w != 0 {
			t.Errorf("a change of %s waits %s: what the pool's state is must not wait", name, w)
		}
	}
}
