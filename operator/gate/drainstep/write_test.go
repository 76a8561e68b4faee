package drainstep

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/metrics"
)

// Each action's write is the protocol transition it names, with what it
// tells: a person reads the events, a dashboard the metric.
func TestWritten(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	admission := protocol.Admission{BootID: "b1", Requests: []string{"r1", "r2"}, Time: now.Add(-5 * time.Minute), Pool: "p"}
	marking := &v1alpha1.NodeMarking{DuringReboot: &v1alpha1.DuringRebootMarks{Labels: map[string]v1alpha1.MarkValue{"lb": "out"}}}
	facts := Facts{Node: "n1", Now: now, Admission: admission, Requests: []string{"r2"}, BootCurrent: true, Marking: marking}
	next := now.Add(time.Minute)
	retry := Deadline{Step: DeadlineRetries, Attempts: 1, MaxAttempts: 3, NextAt: next}
	cases := map[string]struct {
		facts  func(f *Facts)
		step   Step
		write  protocol.Transition
		events []string
		metric *metrics.DrainEnd
		wait   time.Duration
	}{
		"keep draining writes nothing": {step: Step{Report: &Report{Message: "1 pods left"}}},
		"the cordon back":              {step: Step{Action: CordonAgain}, write: protocol.Recordon()},
		"drain again":                  {step: Step{Action: DrainAgain}, write: protocol.Redrain()},
		"marks":                        {step: Step{Action: MarkNode}, write: protocol.Mark(marking)},
		"released for a hook": {step: Step{Action: ReleaseForHook, Message: "hook h failed"},
			write: protocol.Abandon(protocol.DrainFailure{BootID: "b1", Requests: []string{"r2"}, Time: now, Reason: v1alpha1.HookFailedReason, Message: "hook h failed"})},
		"retried": {step: Step{Action: RetryDrain, Deadline: retry, Message: "drain of node n1 did not finish within 10m0s"},
			write: protocol.Retry(protocol.DrainRetrying{BootID: "b1", Requests: []string{"r1", "r2"}, Attempts: 1, MaxAttempts: 3, NextAt: next,
				Message: "drain of node n1 did not finish within 10m0s"}),
			events: []string{v1alpha1.DrainRetryScheduledReason}, metric: &metrics.DrainEnd{Retried: true}, wait: time.Minute},
		"abandoned": {step: Step{Action: AbandonDrain, Message: "past it"},
			write:  protocol.Abandon(protocol.DrainFailure{BootID: "b1", Requests: []string{"r2"}, Time: now, Reason: v1alpha1.DrainTimeoutReason, Message: "past it"}),
			events: []string{v1alpha1.DrainFailedEventReason}, metric: &metrics.DrainEnd{FailedFor: v1alpha1.DrainTimeoutReason}},
		"approved": {step: Step{Action: ApproveNode}, write: protocol.Approve(admission, now, false),
			metric: &metrics.DrainEnd{Took: 5 * time.Minute}},
		"approved, forced": {facts: func(f *Facts) { f.Forced = true }, step: Step{Action: ApproveNode},
			write: protocol.Approve(admission, now, true), events: []string{"RebootApproved"}},
		"a refused marking is told": {step: Step{Report: &Report{Blocked: true, Message: "bad marking", MarkingRefused: true}},
			events: []string{v1alpha1.NodeMarkingRefusedReason}},
		"a refused marking is told once": {facts: func(f *Facts) { f.DrainingSays = "n1: bad marking" },
			step: Step{Report: &Report{Blocked: true, Message: "bad marking", MarkingRefused: true}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			f := facts
			if c.facts != nil {
				c.facts(&f)
			}
			got := written(f, c.step)
			var reasons []string
			for _, e := range got.Events {
				reasons = append(reasons, e.Reason)
			}
			g.Expect(reasons).To(Equal(c.events))
			g.Expect(got.Metric).To(Equal(c.metric))
			g.Expect(got.Requeue).To(Equal(c.wait))
			if c.write == nil {
				g.Expect(got.Write).To(BeNil())
				return
			}
			g.Expect(got.Write).NotTo(BeNil())
			node := func(t protocol.Transition) *corev1.Node {
				n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{}, Labels: map[string]string{}}}
				t.Apply(n)
				return n
			}
			g.Expect(node(got.Write)).To(Equal(node(c.write)))
		})
	}
}
