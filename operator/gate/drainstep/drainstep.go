package drainstep

import (
	"fmt"
	"strings"
	"time"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/operator/hooks"
	"github.com/kmaint/kmaint/operator/metrics"
)

// Facts is what decides an admitted node's next step in the drain
// stage (Decide): what its view says, the hook runner's decision at
// the point it reached, its drain's last step, the budget and the clock.
type Facts struct {
	Node string
	Now  time.Time
	// Opts are the pool's drain options.
	Opts v1alpha1.DrainOptions
	// Admission is the node's admission, as its approval writes it (with
	// the view of the reconcile); Requests are its requests that a failed
	// drain fails: its current ones of the admitted boot. BootCurrent is
	// false when the node's current boot is not the admitted one: it is
	// never approved (the gate releases it). Forced: its drain was forced
	// in this admission.
	Admission   protocol.Admission
	Requests    []string
	BootCurrent bool
	Forced      bool
	// Cordoned is false when someone lifted kmaint's cordon, or before
	// the first one of a pool with silences.
	Cordoned bool
	// SilencesWait says why the node waits for its pool's silences before
	// its cordon and drain; empty when it does not.
	// SilencesUnavailable: they cannot be made (the pool holds).
	SilencesWait        string
	SilencesUnavailable bool
	// Marked: the pool's duringReboot marks (Marking) are on the node, or
	// it has none; MarkingProblem says why they cannot be put on, and
	// DrainingSays is what the pool's Draining condition says, so that a
	// refusal is told once.
	Marked         bool
	Marking        *v1alpha1.NodeMarking
	MarkingProblem string
	DrainingSays   string
	// AtBeforeReboot: the node reached its beforeReboot hooks for its
	// admission, and waits there or passed them.
	AtBeforeReboot bool
	// DrainHooks and RebootHooks are the runner's decisions at the
	// beforeDrain and beforeReboot points, for the point the node reached
	// in this reconcile; nil for one it did not.
	DrainHooks, RebootHooks *hooks.Decision
	// Last is the drain's last step (Stepped: one ended) as the drain
	// stage followed it in this reconcile.
	Last    drain.StepResult
	Stepped bool
	// DrainStart is when the drain began; RebootHooksPassed when its
	// beforeReboot hooks passed (zero: not).
	DrainStart, RebootHooksPassed time.Time
	// Retrying is the node's drain retries on record.
	Retrying *protocol.DrainRetrying
	// MayApprove: its approval fits the budget, of which Used are taken,
	// with Budget the pool's.
	MayApprove   bool
	Used, Budget int
}

// Action is the one thing the drain stage does to a node in a reconcile.
type Action int

const (
	// KeepDraining writes nothing: the report says where the node stands.
	KeepDraining Action = iota
	// CordonAgain puts back the cordon someone lifted (protocol.Recordon),
	// or puts on the first one, once a pool's silences are made.
	CordonAgain
	// DrainAgain puts it back on a node at its beforeReboot hooks, which
	// then drains again before it meets them again (protocol.Redrain).
	DrainAgain
	// MarkNode puts the pool's duringReboot marks on (protocol.Mark).
	MarkNode
	// RunHooks writes and begins what the hook runner's decision asks.
	RunHooks
	// ReleaseForHook lets the node go as its hook's failure says: the
	// requests fail with HookFailed (protocol.Abandon).
	ReleaseForHook
	// ApproveNode approves the reboot (protocol.Approve).
	ApproveNode
	// RetryDrain, AbandonDrain and ForceDrain act on a drain past its
	// timeout, as DecideDeadline says.
	RetryDrain
	AbandonDrain
	ForceDrain
)

// Step is Decide's answer: the action, the hook decision it applies
// (RunHooks), what the pool's Draining condition says of the node (nil:
// nothing new), whether the node's drain stops, the deadline's decision
// and message for RetryDrain and AbandonDrain, and how soon to look again
// (zero: the drain's steps wake the pool); then what the action writes
// (Write, a protocol transition; nil for none) and tells (Events, on the
// node and its pool, and Metric).
type Step struct {
	Action    Action
	Hooks     *hooks.Decision
	Report    *Report
	StopSteps bool
	Deadline  Deadline
	Message   string
	Requeue   time.Duration
	Write     protocol.Transition
	Events    []Event
	Metric    *metrics.DrainEnd
}

// Decide decides an admitted node's one step in this reconcile of the
// drain stage: a pure function of its facts. Each step is at most one
// node write, and the next reconcile goes on from what it wrote; the hook
// runner writes a second time when it begins an attempt (the record before
// the Job, its handle after it, invariant 5), and a forced drain is
// approved in the reconcile that forced it (ForceDrain). The stage's order: the
// cordon back where someone lifted it, the pool's marks, the beforeDrain
// hooks (nothing is evicted before they pass), the drain, then, drained,
// the beforeReboot hooks, a drain taken again after them, and the
// approval within the budget; a drain past its timeout is retried,
// abandoned or forced.
func Decide(f Facts) Step {
	return written(f, decide(f))
}

func decide(f Facts) Step {
	switch {
	case f.SilencesWait != "":
		// Nothing more is done to it before its silences are made: the
		// silences controller's record wakes the pool.
		return Step{Report: &Report{Message: f.SilencesWait, Blocked: f.SilencesUnavailable}, StopSteps: true}
	case !f.Cordoned && f.AtBeforeReboot:
		// What the drain found before counts for nothing: it drains
		// again, and meets its hooks again after (their Jobs are the
		// same, and are not run twice).
		return Step{Action: DrainAgain, StopSteps: true}
	case !f.Cordoned:
		return Step{Action: CordonAgain, StopSteps: true}
	case !f.Marked && f.MarkingProblem == "":
		return Step{Action: MarkNode}
	case f.Marked && f.AtBeforeReboot:
		return decideBeforeReboot(f, true)
	}
	var refused string
	if !f.Marked {
		refused = f.MarkingProblem
	} else if step, ok := decideAtHooks(f.DrainHooks); ok {
		return step
	}
	drained := f.Stepped && f.Last.Err == nil && f.Last.Progress.Done
	elapsed := f.Now.Sub(f.DrainStart)
	switch {
	case drained && !f.MayApprove:
		// Approving it would take the pool past its budget: it waits,
		// cordoned, and the pool says why. Its drain is done, so no
		// timeout abandons it.
		return Step{Report: &Report{Blocked: true, Message: fmt.Sprintf(
			"drained; its approval waits: %d nodes count against a maxUnavailable of %d", f.Used, f.Budget)}}
	case drained && f.Last.Stale:
		// Its pool's reconciles lagged behind the steps: the next step,
		// under way, looks again before the node is approved.
		return Step{Report: &Report{Message: "drained; looking once more before its approval"}}
	case drained:
		return decideBeforeReboot(f, false)
	case elapsed >= f.Timeout():
		return decideAtDeadline(f, f.Last, refused)
	}
	step := Step{Requeue: min(drain.StepTimeout, f.Timeout()-elapsed)}
	switch {
	case refused != "":
		step.Report = &Report{Blocked: true, Message: refused, MarkingRefused: true}
	case f.Stepped:
		r := report(f.Last.Progress, f.Last.Err)
		step.Report = &r
	default:
		step.Report = &Report{Message: "its first drain step is under way"}
	}
	return step
}

// decideAtHooks is the step of a node at a point's hooks (d, the runner's
// decision there) that has not passed them, or that passed them in a
// decision still to be written; false when they passed as recorded.
func decideAtHooks(d *hooks.Decision) (Step, bool) {
	outcome := d.Outcome()
	switch {
	case d.Acts():
		// Where the node stands is written first: the next reconcile acts on it.
		step := Step{Action: RunHooks, Hooks: d}
		if outcome != hooks.OutcomePassed {
			step.Report = &Report{Message: d.Record.Describe(), Blocked: outcome == hooks.OutcomeHalted}
		}
		return step, true
	case outcome == hooks.OutcomeReleased:
		return Step{Action: ReleaseForHook, Message: d.Record.Describe(), StopSteps: true}, true
	case outcome != hooks.OutcomePassed:
		return Step{Report: &Report{Message: d.Record.Describe(), Blocked: outcome == hooks.OutcomeHalted}}, true
	}
	return Step{}, false
}

// DecideBeforeReboot decides about a drained node: its beforeReboot
// hooks, and its approval once they passed, its approval fits the budget,
// and, if it waited at them (waited; not when its drain ended in this
// pass), once a drain taken again after they passed finds it drained: a
// hook may take minutes, and a pod that landed meanwhile (one that
// tolerates the cordon, or is bound to the node by name) is evicted before
// the reboot, its PodDisruptionBudget holding, not killed by it. While the
// node waits at its hooks its drain goes on, and evicts such pods as they
// land.
func DecideBeforeReboot(f Facts, waited bool) Step {
	return written(f, decideBeforeReboot(f, waited))
}

func decideBeforeReboot(f Facts, waited bool) Step {
	if step, ok := decideAtHooks(f.RebootHooks); ok {
		return step
	}
	var redrain *Report
	if waited {
		redrain = redrainReport(f.Last, f.Stepped)
	}
	switch {
	case redrain != nil && !f.Last.At.IsZero() && !f.RebootHooksPassed.IsZero() && f.Now.Sub(f.RebootHooksPassed) >= f.Timeout():
		// The drain after the hooks is a drain like the first: the pool's
		// timeout, counted from when they passed, and drain.onTimeout.
		// Only a step's finding is past it: a drain whose first step is
		// under way is not. A node whose hooks were taken out of its pool
		// while it waited has no passes recorded: from the next reconcile on
		// its drain is the first one again, timed from its admission.
		return decideAtDeadline(f, f.Last, "")
	case !f.MayApprove:
		return Step{Report: &Report{Blocked: true, Message: fmt.Sprintf(
			"drained and its beforeReboot hooks passed; its approval waits: %d nodes count against a maxUnavailable of %d", f.Used, f.Budget)}}
	case redrain != nil:
		return Step{Report: &Report{Blocked: redrain.Blocked,
			Message: "its beforeReboot hooks passed; its approval waits for the drain to find it drained again: " + redrain.Message}}
	case !f.BootCurrent:
		// Its admitted boot is gone: the gate releases its admission
		// (AdmissionVoid) on the next reconcile.
		return Step{}
	}
	return Step{Action: ApproveNode}
}

// decideAtDeadline decides about a drain past its timeout, as
// DecideDeadline says; the drain stops. refused is why the pool's marks
// could not be put on: such a drain is never forced. A forced drain waits,
// cordoned, while approving it would take the pool past its budget.
func decideAtDeadline(f Facts, last drain.StepResult, refused string) Step {
	d := DecideDeadline(f.Opts, f.Retrying, f.Admission.BootID, refused != "", f.Now)
	msg := deadlineMessage(f.Node, f.Timeout(), last.Progress.Blockers, last.Err, refused)
	switch d.Step {
	case DeadlineRetries:
		return Step{Action: RetryDrain, Deadline: d, Message: msg, StopSteps: true}
	case DeadlineForces:
		if !f.MayApprove {
			return Step{Report: &Report{Blocked: true, Message: "past its timeout; the forced reboot waits for the pool's budget"}, StopSteps: true}
		}
		return Step{Action: ForceDrain, StopSteps: true}
	}
	if d.MaxAttempts > 1 {
		msg = fmt.Sprintf("%s (attempt %d of %d; no attempt left)", msg, d.Attempts, d.MaxAttempts)
	}
	return Step{Action: AbandonDrain, Deadline: d, Message: msg, StopSteps: true}
}

// deadlineMessage says what kept a drain from finishing.
func deadlineMessage(node string, timeout time.Duration, blockers []string, stepErr error, markingRefused string) string {
	msg := fmt.Sprintf("drain of node %s did not finish within %s", node, timeout)
	switch {
	case markingRefused != "":
		msg += ": " + markingRefused
	case len(blockers) > 0:
		msg += ": " + strings.Join(blockers, "; ")
	case stepErr != nil:
		msg += ": " + stepErr.Error()
	}
	return msg
}

// Report is where a drain stands, for the pool's Draining condition.
type Report struct {
	Message string
	// blocked is true when something refuses the drain: a budget, a pod the
	// options do not allow to evict, or a failing API call.
	Blocked bool
	// markingRefused is true when the message says why the pool's
	// nodeMarking cannot be put on the node, whose drain then does not
	// start; its deadline then never forces it.
	MarkingRefused bool
}

// report says, for a person, where a drain stands after a step.
func report(p drain.Progress, err error) Report {
	if err != nil {
		return Report{Message: err.Error(), Blocked: true}
	}
	msg := fmt.Sprintf("%d pods left", p.Remaining)
	if len(p.Blockers) > 0 {
		msg += ": " + strings.Join(p.Blockers, "; ")
	}
	return Report{Message: msg, Blocked: len(p.Blockers) > 0}
}

// redrainReport is nil when the drain's last step, taken a moment ago,
// found the node drained; else it says where the drain stands.
func redrainReport(last drain.StepResult, stepped bool) *Report {
	switch {
	case !stepped:
		return &Report{Message: "its first step is under way"}
	case last.Err == nil && last.Progress.Done && last.Stale:
		return &Report{Message: "looking once more"}
	case last.Err == nil && last.Progress.Done:
		return nil
	}
	rep := report(last.Progress, last.Err)
	return &rep
}

// defaultTimeout applies when a pool leaves drain.timeout unset, as the
// built-in default pool does.
const defaultTimeout = 10 * time.Minute

// Timeout is how long the node's drain may take: its pool's
// drain.timeout.
func (f Facts) Timeout() time.Duration {
	if t := f.Opts.Timeout; t != nil && t.Duration > 0 {
		return t.Duration
	}
	return defaultTimeout
}

// MarkingProblem says why a pool's duringReboot marks cannot be put on a
// node: the marking does not pass the API's rules (a pool stored before
// them). Empty when they can. A label that another pool's selector
// matches, or that its own no longer does, moves no node in flight: it
// stays with the pool that admitted it until its maintenance ends
// (pools.Of), and the marks come off when its reboot completes.
func MarkingProblem(m *v1alpha1.NodeMarking) string {
	if err := m.Check(); err != nil {
		return fmt.Sprintf("the pool's nodeMarking cannot be used: %v", err)
	}
	return ""
}
