package drainstep

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
	base := func() Facts {
		return Facts{Node: "n1", Now: now, Cordoned: true, Marked: true, Admission: protocol.Admission{BootID: "b1"}, BootCurrent: true,
			DrainStart: now.Add(-time.Minute), DrainHooks: noHooks(protocol.BeforeDrain), MayApprove: true, Used: 1, Budget: 2}
	}
	retry3 := v1alpha1.DrainOptions{OnTimeout: v1alpha1.DrainRetryAction, Retry: &v1alpha1.DrainRetry{MaxAttempts: 3, Backoff: &metav1.Duration{Duration: time.Minute}}}
	cases := map[string]struct {
		facts func(f *Facts)
		want  Step
	}{
		"someone uncordoned it: the cordon goes back": {
			facts: func(f *Facts) { f.Cordoned = false },
			want:  Step{Action: CordonAgain, StopSteps: true},
		},
		"admitted in a pool with silences: nothing before they are made": {
			facts: func(f *Facts) {
				f.Cordoned, f.SilencesWait = false, "waiting for its Alertmanager silences before its cordon"
			},
			want: Step{Report: &Report{Message: "waiting for its Alertmanager silences before its cordon"}, StopSteps: true},
		},
		"silences that cannot be made: it waits, and says so as blocked": {
			facts: func(f *Facts) { f.SilencesWait, f.SilencesUnavailable = "its silences cannot be made: refused", true },
			want:  Step{Report: &Report{Message: "its silences cannot be made: refused", Blocked: true}, StopSteps: true},
		},
		"uncordoned at its beforeReboot hooks: it drains again": {
			facts: func(f *Facts) { f.Cordoned, f.AtBeforeReboot = false, true },
			want:  Step{Action: DrainAgain, StopSteps: true},
		},
		"the pool's marks go on before anything else": {
			facts: func(f *Facts) { f.Marked = false },
			want:  Step{Action: MarkNode},
		},
		"marks refused: it waits, saying why": {
			facts: func(f *Facts) { f.Marked, f.MarkingProblem, f.DrainHooks = false, "bad marking", nil },
			want:  Step{Report: &Report{Blocked: true, Message: "bad marking", MarkingRefused: true}, Requeue: drain.StepTimeout},
		},
		"marks refused past the timeout: never forced": {
			facts: func(f *Facts) {
				f.Marked, f.MarkingProblem, f.DrainHooks = false, "bad marking", nil
				f.Opts.OnTimeout, f.DrainStart = v1alpha1.DrainForceAction, now.Add(-timeout)
			},
			want: Step{Action: AbandonDrain, StopSteps: true, Deadline: Deadline{Step: DeadlineAbandons, Attempts: 1, MaxAttempts: 1},
				Message: "drain of node n1 did not finish within 10m0s: bad marking"},
		},
		"a pool's own timeout, longer than the default: not past it yet": {
			facts: func(f *Facts) {
				f.Opts.Timeout, f.DrainStart = &metav1.Duration{Duration: 2 * timeout}, now.Add(-timeout)
				f.Last, f.Stepped = drain.StepResult{Progress: drain.Progress{Remaining: 1}, At: now}, true
			},
			want: Step{Report: &Report{Message: "1 pods left"}, Requeue: drain.StepTimeout},
		},
		"past the pool's own timeout, shorter than the default": {
			facts: func(f *Facts) {
				f.Opts.Timeout, f.DrainStart = &metav1.Duration{Duration: time.Minute}, now.Add(-time.Minute)
				f.Last, f.Stepped = drain.StepResult{Progress: drain.Progress{Remaining: 1}, At: now}, true
			},
			want: Step{Action: RetryDrain, StopSteps: true, Deadline: Deadline{Step: DeadlineRetries, Attempts: 1, MaxAttempts: 3, NextAt: now.Add(30 * time.Minute)},
				Message: "drain of node n1 did not finish within 1m0s"},
		},
		"beforeDrain hooks begin: their record is written, nothing evicted": {
			facts: func(f *Facts) { f.DrainHooks = decision(point(protocol.BeforeDrain, waiting), true) },
			want: Step{Action: RunHooks, Hooks: decision(point(protocol.BeforeDrain, waiting), true),
				Report: &Report{Message: "waiting for hook h (beforeDrain) since 2026-12-07T11:59:00Z"}},
		},
		"beforeDrain hooks passed, to be written": {
			facts: func(f *Facts) { f.DrainHooks = decision(point(protocol.BeforeDrain, passed), true) },
			want:  Step{Action: RunHooks, Hooks: decision(point(protocol.BeforeDrain, passed), true)},
		},
		"beforeDrain hooks wait": {
			facts: func(f *Facts) { f.DrainHooks = decision(point(protocol.BeforeDrain, waiting), false) },
			want:  Step{Report: &Report{Message: "waiting for hook h (beforeDrain) since 2026-12-07T11:59:00Z"}},
		},
		"a beforeDrain hook failed and halts: it keeps its slot": {
			facts: func(f *Facts) { f.DrainHooks = decision(point(protocol.BeforeDrain, failedWith("Halt")), false) },
			want:  Step{Report: &Report{Blocked: true, Message: "hook h (beforeDrain) failed at attempt 1: HookJobFailed: exit 1"}},
		},
		"a beforeDrain hook failed and releases: released once recorded": {
			facts: func(f *Facts) {
				f.DrainHooks = decision(point(protocol.BeforeDrain, failedWith("Release")), false)
			},
			want: Step{Action: ReleaseForHook, StopSteps: true, Message: "hook h (beforeDrain) failed at attempt 1: HookJobFailed: exit 1"},
		},
		"a failure that releases is written first": {
			facts: func(f *Facts) { f.DrainHooks = decision(point(protocol.BeforeDrain, failedWith("Release")), true) },
			want: Step{Action: RunHooks, Hooks: decision(point(protocol.BeforeDrain, failedWith("Release")), true),
				Report: &Report{Message: "hook h (beforeDrain) failed at attempt 1: HookJobFailed: exit 1"}},
		},
		"its first drain step is under way": {
			want: Step{Report: &Report{Message: "its first drain step is under way"}, Requeue: drain.StepTimeout},
		},
		"pods left, one blocked": {
			facts: func(f *Facts) {
				f.Last, f.Stepped = drain.StepResult{Progress: drain.Progress{Remaining: 2, Blockers: []string{"pod a/b: PDB"}}, At: now}, true
				f.DrainStart = now.Add(-timeout + time.Second)
			},
			want: Step{Report: &Report{Blocked: true, Message: "2 pods left: pod a/b: PDB"}, Requeue: time.Second},
		},
		"a step that failed": {
			facts: func(f *Facts) {
				f.Last, f.Stepped = drain.StepResult{Err: errors.New("list pods: timeout"), At: now}, true
			},
			want: Step{Report: &Report{Blocked: true, Message: "list pods: timeout"}, Requeue: drain.StepTimeout},
		},
		"drained, over the budget: it waits, cordoned": {
			facts: func(f *Facts) { f.Last, f.Stepped, f.MayApprove, f.Used = drained, true, false, 2 },
			want:  Step{Report: &Report{Blocked: true, Message: "drained; its approval waits: 2 nodes count against a maxUnavailable of 2"}},
		},
		"drained by a step too old: looked at once more": {
			facts: func(f *Facts) { f.Last, f.Stepped = drained, true; f.Last.Stale = true },
			want:  Step{Report: &Report{Message: "drained; looking once more before its approval"}},
		},
		"drained, no beforeReboot hooks: approved": {
			facts: func(f *Facts) { f.Last, f.Stepped, f.RebootHooks = drained, true, noHooks(protocol.BeforeReboot) },
			want:  Step{Action: ApproveNode},
		},
		"drained: its beforeReboot hooks begin": {
			facts: func(f *Facts) {
				f.Last, f.Stepped, f.RebootHooks = drained, true, decision(point(protocol.BeforeReboot, waiting), true)
			},
			want: Step{Action: RunHooks, Hooks: decision(point(protocol.BeforeReboot, waiting), true),
				Report: &Report{Message: "waiting for hook h (beforeReboot) since 2026-12-07T11:59:00Z"}},
		},
		"past the timeout, retried": {
			facts: func(f *Facts) { f.Opts, f.DrainStart = retry3, now.Add(-timeout) },
			want: Step{Action: RetryDrain, StopSteps: true, Deadline: Deadline{Step: DeadlineRetries, Attempts: 1, MaxAttempts: 3, NextAt: now.Add(time.Minute)},
				Message: "drain of node n1 did not finish within 10m0s"},
		},
		"past the timeout, its last attempt abandoned": {
			facts: func(f *Facts) {
				f.Opts, f.DrainStart, f.Retrying = retry3, now.Add(-timeout), &protocol.DrainRetrying{BootID: "b1", Attempts: 2}
				f.Last, f.Stepped = drain.StepResult{Progress: drain.Progress{Remaining: 1, Blockers: []string{"pod a/b: PDB"}}, At: now}, true
			},
			want: Step{Action: AbandonDrain, StopSteps: true, Deadline: Deadline{Step: DeadlineAbandons, Attempts: 3, MaxAttempts: 3},
				Message: "drain of node n1 did not finish within 10m0s: pod a/b: PDB (attempt 3 of 3; no attempt left)"},
		},
		"past the timeout, forced": {
			facts: func(f *Facts) { f.Opts.OnTimeout, f.DrainStart = v1alpha1.DrainForceAction, now.Add(-timeout) },
			want:  Step{Action: ForceDrain, StopSteps: true},
		},
		"past the timeout, its forcing waits for the budget": {
			facts: func(f *Facts) {
				f.Opts.OnTimeout, f.DrainStart, f.MayApprove = v1alpha1.DrainForceAction, now.Add(-timeout), false
			},
			want: Step{Report: &Report{Blocked: true, Message: "past its timeout; the forced reboot waits for the pool's budget"}, StopSteps: true},
		},
		"at its beforeReboot hooks, waiting": {
			facts: func(f *Facts) {
				f.AtBeforeReboot, f.RebootHooks = true, decision(point(protocol.BeforeReboot, waiting), false)
				f.Last, f.Stepped = drained, true
			},
			want: Step{Report: &Report{Message: "waiting for hook h (beforeReboot) since 2026-12-07T11:59:00Z"}},
		},
		"its beforeReboot hooks passed: the drain again, its first step under way": {
			facts: func(f *Facts) {
				f.AtBeforeReboot, f.RebootHooks, f.RebootHooksPassed = true, decision(point(protocol.BeforeReboot, passed), false), passed.Passed
			},
			want: Step{Report: &Report{Message: "its beforeReboot hooks passed; its approval waits for the drain to find it drained again: its first step is under way"}},
		},
		"its beforeReboot hooks passed and the drain again found it drained: approved": {
			facts: func(f *Facts) {
				f.AtBeforeReboot, f.RebootHooks, f.RebootHooksPassed = true, decision(point(protocol.BeforeReboot, passed), false), passed.Passed
				f.Last, f.Stepped = drained, true
			},
			want: Step{Action: ApproveNode},
		},
		"its beforeReboot hooks passed, over the budget": {
			facts: func(f *Facts) {
				f.AtBeforeReboot, f.RebootHooks, f.RebootHooksPassed = true, decision(point(protocol.BeforeReboot, passed), false), passed.Passed
				f.Last, f.Stepped, f.MayApprove, f.Used = drained, true, false, 2
			},
			want: Step{Report: &Report{Blocked: true,
				Message: "drained and its beforeReboot hooks passed; its approval waits: 2 nodes count against a maxUnavailable of 2"}},
		},
		"the drain after its beforeReboot hooks past the timeout counted from them": {
			facts: func(f *Facts) {
				f.AtBeforeReboot, f.RebootHooks, f.RebootHooksPassed = true, decision(point(protocol.BeforeReboot, passed), false), now.Add(-timeout)
				f.Last, f.Stepped, f.Opts = drain.StepResult{Progress: drain.Progress{Remaining: 1}, At: now}, true, retry3
			},
			want: Step{Action: RetryDrain, StopSteps: true, Deadline: Deadline{Step: DeadlineRetries, Attempts: 1, MaxAttempts: 3, NextAt: now.Add(time.Minute)},
				Message: "drain of node n1 did not finish within 10m0s"},
		},
		"a drain after the hooks whose first step is under way is not past it": {
			facts: func(f *Facts) {
				f.AtBeforeReboot, f.RebootHooks, f.RebootHooksPassed = true, decision(point(protocol.BeforeReboot, passed), false), now.Add(-timeout)
			},
			want: Step{Report: &Report{Message: "its beforeReboot hooks passed; its approval waits for the drain to find it drained again: its first step is under way"}},
		},
	}
	cases["drained, its admitted boot gone: nothing, the gate releases it"] = struct {
		facts func(f *Facts)
		want  Step
	}{facts: func(f *Facts) {
		f.Last, f.Stepped, f.RebootHooks, f.BootCurrent = drained, true, noHooks(protocol.BeforeReboot), false
	}}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := base()
			if c.facts != nil {
				c.facts(&f)
			}
			NewWithT(t).Expect(decide(f)).To(Equal(c.want))
		})
	}
}

// What happens at the deadline, from the pool's options and what the node
// recorded.
func TestDecideDeadline(t *testing.T) {
	now := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	retry := func(n int32, backoff time.Duration) v1alpha1.DrainOptions {
		return v1alpha1.DrainOptions{OnTimeout: v1alpha1.DrainRetryAction, Retry: &v1alpha1.DrainRetry{MaxAttempts: n, Backoff: &metav1.Duration{Duration: backoff}}}
	}
	for name, tc := range map[string]struct {
		opts    v1alpha1.DrainOptions
		prev    *protocol.DrainRetrying
		refused bool
		want    Deadline
	}{
		"default retries 3 times 30m apart": {want: Deadline{Step: DeadlineRetries, Attempts: 1, MaxAttempts: 3, NextAt: now.Add(30 * time.Minute)}},
		"second attempt":                    {opts: retry(3, time.Minute), prev: &protocol.DrainRetrying{BootID: "b", Attempts: 1}, want: Deadline{Step: DeadlineRetries, Attempts: 2, MaxAttempts: 3, NextAt: now.Add(time.Minute)}},
		"last attempt abandons":             {opts: retry(3, time.Minute), prev: &protocol.DrainRetrying{BootID: "b", Attempts: 2}, want: Deadline{Step: DeadlineAbandons, Attempts: 3, MaxAttempts: 3}},
		"a lowered maxAttempts abandons":    {opts: retry(2, time.Minute), prev: &protocol.DrainRetrying{BootID: "b", Attempts: 5}, want: Deadline{Step: DeadlineAbandons, Attempts: 6, MaxAttempts: 2}},
		"another boot's attempts count not": {opts: retry(2, time.Minute), prev: &protocol.DrainRetrying{BootID: "old", Attempts: 1}, want: Deadline{Step: DeadlineRetries, Attempts: 1, MaxAttempts: 2, NextAt: now.Add(time.Minute)}},
		"one attempt is abandon":            {opts: retry(1, time.Minute), want: Deadline{Step: DeadlineAbandons, Attempts: 1, MaxAttempts: 1}},
		"stored past the bounds":            {opts: retry(1000, 1000*time.Hour), prev: &protocol.DrainRetrying{BootID: "b", Attempts: 99}, want: Deadline{Step: DeadlineAbandons, Attempts: 100, MaxAttempts: 100}},
		"largest backoff":                   {opts: retry(100, 24*time.Hour), want: Deadline{Step: DeadlineRetries, Attempts: 1, MaxAttempts: 100, NextAt: now.Add(24 * time.Hour)}},
		"abandon":                           {opts: v1alpha1.DrainOptions{OnTimeout: v1alpha1.DrainAbandonAction}, want: Deadline{Step: DeadlineAbandons, Attempts: 1, MaxAttempts: 1}},
		"force":                             {opts: v1alpha1.DrainOptions{OnTimeout: v1alpha1.DrainForceAction}, want: Deadline{Step: DeadlineForces, Attempts: 1, MaxAttempts: 1}},
		"a refused marking is never forced": {opts: v1alpha1.DrainOptions{OnTimeout: v1alpha1.DrainForceAction}, refused: true, want: Deadline{Step: DeadlineAbandons, Attempts: 1, MaxAttempts: 1}},
	} {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(DecideDeadline(tc.opts, tc.prev, "b", tc.refused, now)).To(Equal(tc.want))
		})
	}
}
