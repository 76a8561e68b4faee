package podcheck

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Hold bounds a pods' hold by the pool's podOptOuts.maxHold, counted from
// the node's note of its first hold; pods that could not be listed hold
// however long it takes.
func TestHold(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	hold := &protocol.OptOut{Reason: v1alpha1.BlockingPodReason, Message: "pod a/b holds node n1"}
	bounds := func(action v1alpha1.PodHoldAction) *v1alpha1.PodOptOuts {
		return &v1alpha1.PodOptOuts{MaxHold: &metav1.Duration{Duration: time.Hour}, AfterMaxHold: action}
	}
	since := func(ago time.Duration) *protocol.Held { return &protocol.Held{Since: now.Add(-ago)} }
	for name, tc := range map[string]struct {
		bounds *v1alpha1.PodOptOuts
		held   *protocol.Held
		unseen bool
		// admit, overdue and until are the verdict's; overdueMessage is
		// true when its opt-out says how long the node was held, false
		// when it is the check's own.
		admit, overdue, overdueMessage bool
		until                          time.Time
	}{
		"no podOptOuts":            {held: since(2 * time.Hour)},
		"no maxHold":               {bounds: &v1alpha1.PodOptOuts{}, held: since(2 * time.Hour)},
		"not held before":          {bounds: bounds(v1alpha1.PodHoldAdmit)},
		"within maxHold":           {bounds: bounds(v1alpha1.PodHoldAdmit), held: since(time.Minute), until: now.Add(59 * time.Minute)},
		"past maxHold, admit":      {bounds: bounds(v1alpha1.PodHoldAdmit), held: since(time.Hour), admit: true},
		"past maxHold, report":     {bounds: bounds(v1alpha1.PodHoldReport), held: since(2 * time.Hour), overdue: true, overdueMessage: true},
		"unseen past maxHold":      {bounds: bounds(v1alpha1.PodHoldAdmit), held: since(2 * time.Hour), unseen: true},
		"unseen past maxHold, too": {bounds: bounds(v1alpha1.PodHoldReport), held: since(2 * time.Hour), unseen: true},
	} {
		t.Run(name, func(t *testing.T) {
			got := Hold(tc.bounds, tc.held, Check{At: now, OptOut: hold, Unseen: tc.unseen}, now)
			if got.Admit != tc.admit || got.Overdue != tc.overdue || !got.Until.Equal(tc.until) {
				t.Errorf("Hold = admit %v, overdue %v, until %v; want %v, %v, %v", got.Admit, got.Overdue, got.Until, tc.admit, tc.overdue, tc.until)
			}
			if got.OptOut == nil {
				t.Fatal("Hold = no opt-out, want one")
			}
			if said := strings.Contains(got.OptOut.Message, "past the pool's podOptOuts.maxHold"); said != tc.overdueMessage || (!said && got.OptOut != hold) {
				t.Errorf("Hold's opt-out = %q, want the overdue message %v", got.OptOut.Message, tc.overdueMessage)
			}
			if hold.Message != "pod a/b holds node n1" {
				t.Fatalf("Hold changed the check's opt-out: %q", hold.Message)
			}
		})
	}
}
