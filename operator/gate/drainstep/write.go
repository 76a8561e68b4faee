package drainstep

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/metrics"
)

// Event is an event a step tells, on the node and on its pool.
type Event struct {
	Type, Reason, Action, Message string
}

// written completes a decided step with what its action writes and tells:
// the one protocol transition, the events and the metric.
func written(f Facts, s Step) Step {
	switch s.Action {
	case CordonAgain:
		s.Write = protocol.Recordon()
	case DrainAgain:
		s.Write = protocol.Redrain()
	case MarkNode:
		s.Write = protocol.Mark(f.Marking)
	case ReleaseForHook:
		s.Write = protocol.Abandon(f.failure(v1alpha1.HookFailedReason, s.Message))
	case RetryDrain:
		d := s.Deadline
		s.Write = protocol.Retry(protocol.DrainRetrying{BootID: f.Admission.BootID, Requests: f.Admission.Requests, Attempts: d.Attempts,
			MaxAttempts: d.MaxAttempts, NextAt: d.NextAt, Message: v1alpha1.FitReason(s.Message)})
		// Its requests wait for the next attempt: the pool looks again
		// when it may start.
		s.Requeue = d.NextAt.Sub(f.Now)
		s.Metric = &metrics.DrainEnd{Retried: true}
		s.Events = append(s.Events, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.DrainRetryScheduledReason, Action: "Drain",
			Message: fmt.Sprintf("%s (attempt %d of %d); node uncordoned, its requests wait; attempt %d not before %s",
				s.Message, d.Attempts, d.MaxAttempts, d.Attempts+1, d.NextAt.UTC().Format(time.RFC3339))})
	case AbandonDrain:
		s.Write = protocol.Abandon(f.failure(v1alpha1.DrainTimeoutReason, s.Message))
		s.Metric = &metrics.DrainEnd{FailedFor: v1alpha1.DrainTimeoutReason}
		s.Events = append(s.Events, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.DrainFailedEventReason, Action: "Drain", Message: s.Message})
	case ApproveNode:
		// The reboot, approved for the boot its requests were made in: the
		// last step before the daemon reboots. A forced drain's record
		// stays on the node, an earlier one's goes.
		s.Write = protocol.Approve(f.Admission, f.Now, f.Forced)
		if f.Forced {
			s.Events = append(s.Events, Event{Type: corev1.EventTypeNormal, Reason: "RebootApproved", Action: "Approve",
				Message: fmt.Sprintf("Node %s's drain was forced; reboot approved for boot %s", f.Node, f.Admission.BootID)})
			break
		}
		// A drain that finished gets no event: the daemon's Rebooting, on
		// the same node a moment later, tells a person the same, and the
		// NodeMaintenance's phase times say when the drain ended. One event
		// less per reboot is one write less in a rollout of thousands.
		s.Metric = &metrics.DrainEnd{Took: f.Now.Sub(f.Admission.Time)}
	}
	if r := s.Report; r != nil && r.MarkingRefused && !strings.Contains(f.DrainingSays, r.Message) {
		// Told once: while the pool's Draining condition does not say so
		// yet.
		s.Events = append(s.Events, Event{Type: corev1.EventTypeWarning, Reason: v1alpha1.NodeMarkingRefusedReason, Action: "Mark", Message: r.Message})
	}
	return s
}

// failure fails the node's requests of its admitted boot for reason, so
// that the same requests do not start the same drain again.
func (f Facts) failure(reason, msg string) protocol.DrainFailure {
	return protocol.DrainFailure{BootID: f.Admission.BootID, Requests: f.Requests, Time: f.Now, Reason: reason, Message: msg}
}
