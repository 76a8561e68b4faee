package gate

import (
	"fmt"
	"strings"
	"time"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/operator/hooks"
)

// drainFacts is what decides an admitted node's next step in the drain
// stage (decideDrain): what its view says, the hook runner's decision at
// the point it reached, its drain's last step, the budget and the clock.
type drainFacts struct {
	node string
	now  time.Time
	// opts are the pool's drain options; timeout its drain's bound
	// (drainTimeout).
	opts    v1alpha1.DrainOptions
	timeout time.Duration
	// cordoned is false when someone lifted kmaint's cordon.
	cordoned bool
	// marked: the pool's duringReboot marks are on the node, or it has
	// none; markingProblem says why they cannot be put on.
	marked         bool
	markingProblem string
	// atBeforeReboot: the node reached its beforeReboot hooks for its
	// admission (drainedForHooks), and waits there or passed them.
	atBeforeReboot bool
	// drainHooks and rebootHooks are the runner's decisions at the
	// beforeDrain and beforeReboot points, for the point the node reached
	// in this reconcile; nil for one it did not.
	drainHooks, rebootHooks *hooks.Decision
	// step is the drain's last step (stepped: one ended) as the drain
	// stage followed it in this reconcile.
	step    drain.StepResult
	stepped bool
	// drainStart is when the drain began (poolState.drainStart);
	// rebootHooksPassed when its beforeReboot hooks passed (zero: not).
	drainStart, rebootHooksPassed time.Time
	// retrying is the node's drain retries on record; boot its admitted
	// boot.
	retrying *protocol.DrainRetrying
	boot     string
	// mayApprove: its approval fits the budget (plan.Approvable), of which used
	// are taken, with budget the pool's.
	mayApprove   bool
	used, budget int
}

// drainAction is the one thing the drain stage does to a node in a reconcile.
type drainAction int

const (
	// keepDraining writes nothing: the report says where the node stands.
	keepDraining drainAction = iota
	// cordonAgain puts back the cordon someone lifted (protocol.Recordon).
	cordonAgain
	// drainAgain puts it back on a node at its beforeReboot hooks, which
	// then drains again before it meets them again (protocol.Redrain).
	drainAgain
	// markNode puts the pool's duringReboot marks on (protocol.Mark).
	markNode
	// runHooks writes and begins what the hook runner's decision asks.
	runHooks
	// releaseForHook lets the node go as its hook's failure says: the
	// requests fail with HookFailed (protocol.Abandon).
	releaseForHook
	// approveNode approves the reboot (protocol.Approve).
	approveNode
	// retryDrain, abandonDrain and forceDrain act on a drain past its
	// timeout, as decideDeadline says.
	retryDrain
	abandonDrain
	forceDrain
)

// drainStep is decideDrain's answer: the action, the hook decision it
// applies (runHooks), what the pool's Draining condition says of the node
// (nil: nothing new), whether the node's drain stops, the deadline's
// decision and message for retryDrain and abandonDrain, and how soon to
// look again while it drains (zero: the drain's steps wake the pool).
type drainStep struct {
	action    drainAction
	hooks     *hooks.Decision
	report    *drainReport
	stopSteps bool
	deadline  deadlineDecision
	message   string
	requeue   time.Duration
}

// decideDrain decides an admitted node's one step in this reconcile of the
// drain stage: a pure function of its facts. Each step is at most one
// node write, and the next reconcile goes on from what it wrote; the hook
// runner writes a second time when it begins an attempt (the record before
// the Job, its handle after it, invariant 5), and a forced drain is
// approved in the reconcile that forced it (forceDrain). The stage's order: the
// cordon back where someone lifted it, the pool's marks, the beforeDrain
// hooks (nothing is evicted before they pass), the drain, then, drained,
// the beforeReboot hooks, a drain taken again after them, and the
// approval within the budget; a drain past its timeout is retried,
// abandoned or forced.
func decideDrain(f drainFacts) drainStep {
	switch {
	case !f.cordoned && f.atBeforeReboot:
		// What the drain found before counts for nothing: it drains
		// again, and meets its hooks again after (their Jobs are the
		// same, and are not run twice).
		return drainStep{action: drainAgain, stopSteps: true}
	case !f.cordoned:
		return drainStep{action: cordonAgain, stopSteps: true}
	case !f.marked && f.markingProblem == "":
		return drainStep{action: markNode}
	case f.marked && f.atBeforeReboot:
		return decideBeforeReboot(f, true)
	}
	var refused string
	if !f.marked {
		refused = f.markingProblem
	} else if step, ok := decideAtHooks(f.drainHooks); ok {
		return step
	}
	drained := f.stepped && f.step.Err == nil && f.step.Progress.Done
	elapsed := f.now.Sub(f.drainStart)
	switch {
	case drained && !f.mayApprove:
		// Approving it would take the pool past its budget: it waits,
		// cordoned, and the pool says why. Its drain is done, so no
		// timeout abandons it.
		return drainStep{report: &drainReport{blocked: true, message: fmt.Sprintf(
			"drained; its approval waits: %d nodes count against a maxUnavailable of %d", f.used, f.budget)}}
	case drained && f.step.Stale:
		// Its pool's reconciles lagged behind the steps: the next step,
		// under way, looks again before the node is approved.
		return drainStep{report: &drainReport{message: "drained; looking once more before its approval"}}
	case drained:
		return decideBeforeReboot(f, false)
	case elapsed >= f.timeout:
		return decideAtDeadline(f, f.step, refused)
	}
	step := drainStep{requeue: min(drain.StepTimeout, f.timeout-elapsed)}
	switch {
	case refused != "":
		step.report = &drainReport{blocked: true, message: refused, markingRefused: true}
	case f.stepped:
		r := report(f.step.Progress, f.step.Err)
		step.report = &r
	default:
		step.report = &drainReport{message: "its first drain step is under way"}
	}
	return step
}

// decideAtHooks is the step of a node at a point's hooks (d, the runner's
// decision there) that has not passed them, or that passed them in a
// decision still to be written; false when they passed as recorded.
func decideAtHooks(d *hooks.Decision) (drainStep, bool) {
	outcome := d.Outcome()
	switch {
	case d.Acts():
		// Where the node stands is written first: the next reconcile acts on it.
		step := drainStep{action: runHooks, hooks: d}
		if outcome != hooks.OutcomePassed {
			step.report = &drainReport{message: d.Record.Describe(), blocked: outcome == hooks.OutcomeHalted}
		}
		return step, true
	case outcome == hooks.OutcomeReleased:
		return drainStep{action: releaseForHook, message: d.Record.Describe(), stopSteps: true}, true
	case outcome != hooks.OutcomePassed:
		return drainStep{report: &drainReport{message: d.Record.Describe(), blocked: outcome == hooks.OutcomeHalted}}, true
	}
	return drainStep{}, false
}

// decideBeforeReboot decides about a drained node: its beforeReboot
// hooks, and its approval once they passed, its approval fits the budget,
// and, if it waited at them (waited; not when its drain ended in this
// pass), once a drain taken again after they passed finds it drained: a
// hook may take minutes, and a pod that landed meanwhile (one that
// tolerates the cordon, or is bound to the node by name) is evicted before
// the reboot, its PodDisruptionBudget holding, not killed by it. While the
// node waits at its hooks its drain goes on, and evicts such pods as they
// land.
func decideBeforeReboot(f drainFacts, waited bool) drainStep {
	if step, ok := decideAtHooks(f.rebootHooks); ok {
		return step
	}
	var redrain *drainReport
	if waited {
		redrain = redrainReport(f.step, f.stepped)
	}
	switch {
	case redrain != nil && !f.step.At.IsZero() && !f.rebootHooksPassed.IsZero() && f.now.Sub(f.rebootHooksPassed) >= f.timeout:
		// The drain after the hooks is a drain like the first: the pool's
		// timeout, counted from when they passed, and drain.onTimeout.
		// Only a step's finding is past it: a drain whose first step is
		// under way is not. A node whose hooks were taken out of its pool
		// while it waited has no passes recorded: from the next reconcile on
		// its drain is the first one again, timed from its admission.
		return decideAtDeadline(f, f.step, "")
	case !f.mayApprove:
		return drainStep{report: &drainReport{blocked: true, message: fmt.Sprintf(
			"drained and its beforeReboot hooks passed; its approval waits: %d nodes count against a maxUnavailable of %d", f.used, f.budget)}}
	case redrain != nil:
		return drainStep{report: &drainReport{blocked: redrain.blocked,
			message: "its beforeReboot hooks passed; its approval waits for the drain to find it drained again: " + redrain.message}}
	}
	return drainStep{action: approveNode}
}

// decideAtDeadline decides about a drain past its timeout, as
// decideDeadline says; the drain stops. refused is why the pool's marks
// could not be put on: such a drain is never forced. A forced drain waits,
// cordoned, while approving it would take the pool past its budget.
func decideAtDeadline(f drainFacts, last drain.StepResult, refused string) drainStep {
	d := decideDeadline(f.opts, f.retrying, f.boot, refused != "", f.now)
	msg := deadlineMessage(f.node, f.timeout, last.Progress.Blockers, last.Err, refused)
	switch d.step {
	case deadlineRetries:
		return drainStep{action: retryDrain, deadline: d, message: msg, stopSteps: true}
	case deadlineForces:
		if !f.mayApprove {
			return drainStep{report: &drainReport{blocked: true, message: "past its timeout; the forced reboot waits for the pool's budget"}, stopSteps: true}
		}
		return drainStep{action: forceDrain, stopSteps: true}
	}
	if d.maxAttempts > 1 {
		msg = fmt.Sprintf("%s (attempt %d of %d; no attempt left)", msg, d.attempts, d.maxAttempts)
	}
	return drainStep{action: abandonDrain, deadline: d, message: msg, stopSteps: true}
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

// drainReport is where a drain stands, for the pool's Draining condition.
type drainReport struct {
	message string
	// blocked is true when something refuses the drain: a budget, a pod the
	// options do not allow to evict, or a failing API call.
	blocked bool
	// markingRefused is true when the message says why the pool's
	// nodeMarking cannot be put on the node, whose drain then does not
	// start; its deadline then never forces it.
	markingRefused bool
}

// report says, for a person, where a drain stands after a step.
func report(p drain.Progress, err error) drainReport {
	if err != nil {
		return drainReport{message: err.Error(), blocked: true}
	}
	msg := fmt.Sprintf("%d pods left", p.Remaining)
	if len(p.Blockers) > 0 {
		msg += ": " + strings.Join(p.Blockers, "; ")
	}
	return drainReport{message: msg, blocked: len(p.Blockers) > 0}
}

// redrainReport is nil when the drain's last step, taken a moment ago,
// found the node drained; else it says where the drain stands.
func redrainReport(last drain.StepResult, stepped bool) *drainReport {
	switch {
	case !stepped:
		return &drainReport{message: "its first step is under way"}
	case last.Err == nil && last.Progress.Done && last.Stale:
		return &drainReport{message: "looking once more"}
	case last.Err == nil && last.Progress.Done:
		return nil
	}
	rep := report(last.Progress, last.Err)
	return &rep
}
