package hooks

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/metrics"
	"github.com/kmaint/kmaint/operator/poolnodes"
)

// Teller tells what happened to a node's hooks: events on the node (and
// the pool, for a failure), a log line and the metrics. The gate, which runs
// the hooks before the reboot, and aftercare, which runs those after it,
// tell alike.
type Teller struct {
	Events  poolnodes.Events
	Metrics *metrics.Recorder
}

// At is a node at one of its pool's hook points.
type At struct {
	Pool  *v1alpha1.MaintenancePool
	Node  protocol.NodeState
	Point protocol.HookPoint
	// BootID is the boot the point is for: the admitted one before the
	// reboot, the new one after it.
	BootID string
	Now    time.Time
}

// RunAt runs the pool's hooks at the node's point (Run), telling what
// happened through t; node keeps its record.
func (r *Runner) RunAt(ctx context.Context, t Teller, at At, node NodeRecord) (Decision, error) {
	d, err := r.DecideAt(ctx, at)
	if err != nil {
		return Decision{}, err
	}
	return r.ApplyAt(ctx, t, at, d, node)
}

// DecideAt is where the node stands in the hooks of its point, the kinds
// observing each attempt; nothing is written or begun.
func (r *Runner) DecideAt(ctx context.Context, at At) (Decision, error) {
	return r.decide(ctx, at.subject(), at.input())
}

// ApplyAt does what d, DecideAt's decision for at, asks (Run's writes and
// attempts), telling what happened through t.
func (r *Runner) ApplyAt(ctx context.Context, t Teller, at At, d Decision, node NodeRecord) (Decision, error) {
	return r.apply(ctx, at.subject(), at.input(), d, node, func(events []Event) { t.tell(ctx, at, events) })
}

// RecordCurrent is NodeRecord.Current for the node as a controller read
// it: whether the API server (live, past every cache) holds the same hook
// record.
func RecordCurrent(ctx context.Context, live client.Reader, node *corev1.Node) func() (bool, error) {
	return func() (bool, error) {
		var now corev1.Node
		if err := live.Get(ctx, client.ObjectKeyFromObject(node), &now); err != nil {
			return false, fmt.Errorf("read node %s's hook record: %w", node.Name, err)
		}
		return now.Annotations[protocol.Hook] == node.Annotations[protocol.Hook], nil
	}
}

// input is what Decide reads of the node's point.
func (at At) input() Input {
	resumeAt, _ := at.Pool.ResumeHaltTime(at.Now) // aftercare reports an unusable one
	return Input{Now: at.Now, Point: at.Point, Pool: at.Pool.Name, BootID: at.BootID, Token: at.Node.HookTokenAt(at.Point, at.BootID),
		Hooks: at.Pool.Spec.Hooks.At(string(at.Point)), Record: at.Node.Hook, ResumeAt: resumeAt}
}

// subject is the node's point as its hooks are told of it.
func (at At) subject() Subject {
	n := at.Node
	s := Subject{Pool: at.Pool.Name, Node: n.Node, Point: at.Point, BootID: at.BootID, Token: n.HookTokenAt(at.Point, at.BootID),
		DesiredConfig: at.Pool.Spec.DesiredConfig, CurrentConfig: n.CurrentConfig, Now: at.Now}
	if n.Admission != nil {
		for _, src := range n.Admission.Sources {
			s.Sources = append(s.Sources, string(src))
		}
		s.Reasons = n.Admission.Reasons
	}
	return s
}

// tell tells events of the node's hooks at its point.
func (t Teller) tell(ctx context.Context, at At, events []Event) {
	node, pool, point := at.Node.Node, at.Pool, at.Point
	log := ctrl.LoggerFrom(ctx).WithValues("node", node.Name, "point", point)
	for _, e := range events {
		switch e.Kind {
		case Started:
			log.Info("Hook started", "hook", e.Hook, "attempt", e.Attempt)
			t.Events.Node(pool, node, corev1.EventTypeNormal, string(e.Kind), "Hook",
				"Node %s waits for hook %s (%s), attempt %d", node.Name, e.Hook, point, e.Attempt)
		case Passed:
			log.Info("Hook passed", "hook", e.Hook, "attempt", e.Attempt, "took", e.Took)
			t.Metrics.HookFinished(pool.Name, string(point), e.Hook, "passed", e.Took)
			t.Events.Node(pool, node, corev1.EventTypeNormal, string(e.Kind), "Hook",
				"Node %s passed hook %s (%s) in %s", node.Name, e.Hook, point, e.Took.Round(time.Second))
		case Failed:
			log.Info("Hook failed", "hook", e.Hook, "attempt", e.Attempt, "reason", e.Reason, "message", e.Message, "again", e.Again)
			t.Metrics.HookFinished(pool.Name, string(point), e.Hook, "failed", e.Took)
			t.Metrics.HookFailed(pool.Name, string(point), e.Hook, e.Reason)
			then := "it runs again"
			if !e.Again {
				then = failureThen(pool, point, e.Hook)
			}
			t.Events.Both(pool, node, corev1.EventTypeWarning, string(e.Kind), "Hook",
				"Node %s failed hook %s (%s) at attempt %d: %s: %s; %s", node.Name, e.Hook, point, e.Attempt, e.Reason, e.Message, then)
		}
	}
}

// failureThen says what a hook's failure for good does.
func failureThen(pool *v1alpha1.MaintenancePool, point protocol.HookPoint, name string) string {
	h := Named(pool.Spec.Hooks.At(string(point)), name)
	switch {
	case h != nil && h.FailurePolicy() == v1alpha1.HookRelease && point == protocol.AfterReboot:
		return "the node is released as it is"
	case h != nil && h.FailurePolicy() == v1alpha1.HookRelease:
		return "the node is released and its requests fail"
	}
	return fmt.Sprintf("the node keeps its slot and pool %s is halted until it is resumed (kubectl kmaint resume %s), which runs the hook again", pool.Name, pool.Name)
}
