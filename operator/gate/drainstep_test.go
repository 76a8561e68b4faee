package gate

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/operator/hooks"
)

// Every branch of the drain stage's decision, each a step of one node in
// one pass: the cordon, the marks, the beforeDrain hooks, the drain, the
// beforeReboot hooks and the drain after them, the budget, the deadline.
func TestDecideDrain(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	const timeout = 10 * time.Minute
	point := func(p protocol.HookPoint, progress protocol.HookProgress) protocol.HookRecord {
		return protocol.HookRecord{Point: p, Since: now.Add(-time.Minute), Hooks: []protocol.HookProgress{progress}}
	}
	waiting := protocol.HookProgress{Name: "h", Attempt: 1, Since: now.Add(-time.Minute), Deadline: now.Add(time.Hour)}
	passed := waiting
	passed.Passed = now.Add(-30 * time.Second)
	failedWith := func(policy string) protocol.HookProgress {
		p := waiting
		p.Failure = &protocol.HookFailure{Reason: hooks.ReasonJobFailed, Message: "exit 1", Time: now, OnFailure: policy}
		return p
	}
	decision := func(rec protocol.HookRecord, write bool) *hooks.Decision {
		return &hooks.Decision{Record: rec, Write: write, Passed: rec.Passed(), Failed: rec.Failed()}
	}
	noHooks := func(p protocol.HookPoint) *hooks.Decision { return decision(protocol.HookRecord{Point: p}, false) }
	drained := drain.StepResult{Progress: drain.Progress{Done: true}, At: now}
	base := func() drainFacts {
		return drainFacts{node: "n1", now: now, timeout: timeout, cordoned: true, marked: true, boot: "b1",
			drainStart: now.Add(-time.Minute), drainHooks: noHooks(protocol.BeforeDrain), mayApprove: true, used: 1, budget: 2}
	}
	retry3 := v1alpha1.DrainOptions{OnTimeout: v1alpha1.DrainRetryAction, Retry: &v1alpha1.DrainRetry{MaxAttempts: 3, Backoff: &metav1.Duration{Duration: time.Minute}}}
	cases := map[string]struct {
		facts func(f *drainFacts)
		want  drainStep
	}{
		"someone uncordoned it: the cordon goes back": {
			facts: func(f *drainFacts) { f.cordoned = false },
			want:  drainStep{action: cordonAgain, stopSteps: true},
		},
		"uncordoned at its beforeReboot hooks: it drains again": {
			facts: func(f *drainFacts) { f.cordoned, f.atBeforeReboot = false, true },
			want:  drainStep{action: drainAgain, stopSteps: true},
		},
		"the pool's marks go on before anything else": {
			facts: func(f *drainFacts) { f.marked = false },
			want:  drainStep{action: markNode},
		},
		"marks refused: it waits, saying why": {
			facts: func(f *drainFacts) { f.marked, f.markingProblem, f.drainHooks = false, "bad marking", nil },
			want:  drainStep{report: &drainReport{blocked: true, message: "bad marking", markingRefused: true}, requeue: drain.StepTimeout},
		},
		"marks refused past the timeout: never forced": {
			facts: func(f *drainFacts) {
				f.marked, f.markingProblem, f.drainHooks = false, "bad marking", nil
				f.opts.OnTimeout, f.drainStart = v1alpha1.DrainForceAction, now.Add(-timeout)
			},
			want: drainStep{action: abandonDrain, stopSteps: true, deadline: deadlineDecision{step: deadlineAbandons, attempts: 1, maxAttempts: 1},
				message: "drain of node n1 did not finish within 10m0s: bad marking"},
		},
		"beforeDrain hooks begin: their record is written, nothing evicted": {
			facts: func(f *drainFacts) { f.drainHooks = decision(point(protocol.BeforeDrain, waiting), true) },
			want: drainStep{action: runHooks, hooks: decision(point(protocol.BeforeDrain, waiting), true),
				report: &drainReport{message: "waiting for hook h (beforeDrain) since 2026-12-07T11:59:00Z"}},
		},
		"beforeDrain hooks passed, to be written": {
			facts: func(f *drainFacts) { f.drainHooks = decision(point(protocol.BeforeDrain, passed), true) },
			want:  drainStep{action: runHooks, hooks: decision(point(protocol.BeforeDrain, passed), true)},
		},
		"beforeDrain hooks wait": {
			facts: func(f *drainFacts) { f.drainHooks = decision(point(protocol.BeforeDrain, waiting), false) },
			want:  drainStep{report: &drainReport{message: "waiting for hook h (beforeDrain) since 2026-12-07T11:59:00Z"}},
		},
		"a beforeDrain hook failed and halts: it keeps its slot": {
			facts: func(f *drainFacts) { f.drainHooks = decision(point(protocol.BeforeDrain, failedWith("Halt")), false) },
			want:  drainStep{report: &drainReport{blocked: true, message: "hook h (beforeDrain) failed at attempt 1: HookJobFailed: exit 1"}},
		},
		"a beforeDrain hook failed and releases: released once recorded": {
			facts: func(f *drainFacts) {
				f.drainHooks = decision(point(protocol.BeforeDrain, failedWith("Release")), false)
			},
			want: drainStep{action: releaseForHook, stopSteps: true, message: "hook h (beforeDrain) failed at attempt 1: HookJobFailed: exit 1"},
		},
		"a failure that releases is written first": {
			facts: func(f *drainFacts) { f.drainHooks = decision(point(protocol.BeforeDrain, failedWith("Release")), true) },
			want: drainStep{action: runHooks, hooks: decision(point(protocol.BeforeDrain, failedWith("Release")), true),
				report: &drainReport{message: "hook h (beforeDrain) failed at attempt 1: HookJobFailed: exit 1"}},
		},
		"its first drain step is under way": {
			want: drainStep{report: &drainReport{message: "its first drain step is under way"}, requeue: drain.StepTimeout},
		},
		"pods left, one blocked": {
			facts: func(f *drainFacts) {
				f.step, f.stepped = drain.StepResult{Progress: drain.Progress{Remaining: 2, Blockers: []string{"pod a/b: PDB"}}, At: now}, true
				f.drainStart = now.Add(-timeout + time.Second)
			},
			want: drainStep{report: &drainReport{blocked: true, message: "2 pods left: pod a/b: PDB"}, requeue: time.Second},
		},
		"a step that failed": {
			facts: func(f *drainFacts) {
				f.step, f.stepped = drain.StepResult{Err: errors.New("list pods: timeout"), At: now}, true
			},
			want: drainStep{report: &drainReport{blocked: true, message: "list pods: timeout"}, requeue: drain.StepTimeout},
		},
		"drained, over the budget: it waits, cordoned": {
			facts: func(f *drainFacts) { f.step, f.stepped, f.mayApprove, f.used = drained, true, false, 2 },
			want:  drainStep{report: &drainReport{blocked: true, message: "drained; its approval waits: 2 nodes count against a maxUnavailable of 2"}},
		},
		"drained by a step too old: looked at once more": {
			facts: func(f *drainFacts) { f.step, f.stepped = drained, true; f.step.Stale = true },
			want:  drainStep{report: &drainReport{message: "drained; looking once more before its approval"}},
		},
		"drained, no beforeReboot hooks: approved": {
			facts: func(f *drainFacts) { f.step, f.stepped, f.rebootHooks = drained, true, noHooks(protocol.BeforeReboot) },
			want:  drainStep{action: approveNode},
		},
		"drained: its beforeReboot hooks begin": {
			facts: func(f *drainFacts) {
				f.step, f.stepped, f.rebootHooks = drained, true, decision(point(protocol.BeforeReboot, waiting), true)
			},
			want: drainStep{action: runHooks, hooks: decision(point(protocol.BeforeReboot, waiting), true),
				report: &drainReport{message: "waiting for hook h (beforeReboot) since 2026-12-07T11:59:00Z"}},
		},
		"past the timeout, retried": {
			facts: func(f *drainFacts) { f.opts, f.drainStart = retry3, now.Add(-timeout) },
			want: drainStep{action: retryDrain, stopSteps: true, deadline: deadlineDecision{step: deadlineRetries, attempts: 1, maxAttempts: 3, nextAt: now.Add(time.Minute)},
				message: "drain of node n1 did not finish within 10m0s"},
		},
		"past the timeout, its last attempt abandoned": {
			facts: func(f *drainFacts) {
				f.opts, f.drainStart, f.retrying = retry3, now.Add(-timeout), &protocol.DrainRetrying{BootID: "b1", Attempts: 2}
				f.step, f.stepped = drain.StepResult{Progress: drain.Progress{Remaining: 1, Blockers: []string{"pod a/b: PDB"}}, At: now}, true
			},
			want: drainStep{action: abandonDrain, stopSteps: true, deadline: deadlineDecision{step: deadlineAbandons, attempts: 3, maxAttempts: 3},
				message: "drain of node n1 did not finish within 10m0s: pod a/b: PDB (attempt 3 of 3; no attempt left)"},
		},
		"past the timeout, forced": {
			facts: func(f *drainFacts) { f.opts.OnTimeout, f.drainStart = v1alpha1.DrainForceAction, now.Add(-timeout) },
			want:  drainStep{action: forceDrain, stopSteps: true},
		},
		"past the timeout, its forcing waits for the budget": {
			facts: func(f *drainFacts) {
				f.opts.OnTimeout, f.drainStart, f.mayApprove = v1alpha1.DrainForceAction, now.Add(-timeout), false
			},
			want: drainStep{report: &drainReport{blocked: true, message: "past its timeout; the forced reboot waits for the pool's budget"}, stopSteps: true},
		},
		"at its beforeReboot hooks, waiting": {
			facts: func(f *drainFacts) {
				f.atBeforeReboot, f.rebootHooks = true, decision(point(protocol.BeforeReboot, waiting), false)
				f.step, f.stepped = drained, true
			},
			want: drainStep{report: &drainReport{message: "waiting for hook h (beforeReboot) since 2026-12-07T11:59:00Z"}},
		},
		"its beforeReboot hooks passed: the drain again, its first step under way": {
			facts: func(f *drainFacts) {
				f.atBeforeReboot, f.rebootHooks, f.rebootHooksPassed = true, decision(point(protocol.BeforeReboot, passed), false), passed.Passed
			},
			want: drainStep{report: &drainReport{message: "its beforeReboot hooks passed; its approval waits for the drain to find it drained again: its first step is under way"}},
		},
		"its beforeReboot hooks passed and the drain again found it drained: approved": {
			facts: func(f *drainFacts) {
				f.atBeforeReboot, f.rebootHooks, f.rebootHooksPassed = true, decision(point(protocol.BeforeReboot, passed), false), passed.Passed
				f.step, f.stepped = drained, true
			},
			want: drainStep{action: approveNode},
		},
		"its beforeReboot hooks passed, over the budget": {
			facts: func(f *drainFacts) {
				f.atBeforeReboot, f.rebootHooks, f.rebootHooksPassed = true, decision(point(protocol.BeforeReboot, passed), false), passed.Passed
				f.step, f.stepped, f.mayApprove, f.used = drained, true, false, 2
			},
			want: drainStep{report: &drainReport{blocked: true,
				message: "drained and its beforeReboot hooks passed; its approval waits: 2 nodes count against a maxUnavailable of 2"}},
		},
		"the drain after its beforeReboot hooks past the timeout counted from them": {
			facts: func(f *drainFacts) {
				f.atBeforeReboot, f.rebootHooks, f.rebootHooksPassed = true, decision(point(protocol.BeforeReboot, passed), false), now.Add(-timeout)
				f.step, f.stepped, f.opts = drain.StepResult{Progress: drain.Progress{Remaining: 1}, At: now}, true, retry3
			},
			want: drainStep{action: retryDrain, stopSteps: true, deadline: deadlineDecision{step: deadlineRetries, attempts: 1, maxAttempts: 3, nextAt: now.Add(time.Minute)},
				message: "drain of node n1 did not finish within 10m0s"},
		},
		"a drain after the hooks whose first step is under way is not past it": {
			facts: func(f *drainFacts) {
				f.atBeforeReboot, f.rebootHooks, f.rebootHooksPassed = true, decision(point(protocol.BeforeReboot, passed), false), now.Add(-timeout)
			},
			want: drainStep{report: &drainReport{message: "its beforeReboot hooks passed; its approval waits for the drain to find it drained again: its first step is under way"}},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := base()
			if c.facts != nil {
				c.facts(&f)
			}
			NewWithT(t).Expect(decideDrain(f)).To(Equal(c.want))
		})
	}
}
