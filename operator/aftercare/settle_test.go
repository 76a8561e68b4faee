package aftercare

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

func TestDecideSettle(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	const settle = time.Minute
	rec := protocol.Settle{BootID: "boot-1", RebootedBoot: "boot-0", Pool: "p", Since: t0, Until: t0.Add(settle)}
	failure := &protocol.HealthCheckFailure{Check: "up", Value: "0", Series: `{node="n"}`, Time: t0.Add(10*time.Second + 300*time.Millisecond)}
	failed := rec
	failed.Failure = failure
	recovered := rec
	at := t0.Add(20 * time.Second)
	recovered.Failure = &protocol.HealthCheckFailure{Check: "up", Value: "0", Time: failure.Time, Recovered: &at}
	recovered.Since, recovered.Until = at, at.Add(settle)
	notReady := rec
	notReady.Since, notReady.Until = t0.Add(5*time.Second), time.Time{}
	healthy := func(at time.Time) *healthResult { return &healthResult{at: at, bad: map[string]badResult{}} }
	bad := func(at time.Time) *healthResult {
		return &healthResult{at: at, bad: map[string]badResult{"n": {check: "up", value: "0", series: `{node="n"}`}}}
	}
	unavailable := func(at time.Time) *healthResult { return &healthResult{at: at, err: "Prometheus is unreachable"} }
	// in is the input of a node with checks, Ready in boot-1, at now.
	in := func(r protocol.Settle, now time.Time, h *healthResult, change ...func(*settleInput)) settleInput {
		i := settleInput{now: now, rec: r, node: "n", bootID: "boot-1", ready: true, guarded: true, settle: settle,
			checks: true, health: h, resume: v1alpha1.ResumeManual}
		for _, c := range change {
			c(&i)
		}
		return i
	}
	noChecks := func(i *settleInput) { i.checks, i.health = false, nil }
	onRecovery := func(i *settleInput) { i.resume = v1alpha1.ResumeOnRecovery }
	resumeAt := func(t time.Time) func(*settleInput) { return func(i *settleInput) { i.resumeAt = t } }

	cases := map[string]struct {
		in settleInput
		// wantStep is what the gate does; wantSince and wantUntil the
		// written record's times (settleUpdate); wantWake when it looks
		// again at the latest.
		wantStep   settleStep
		wantSince  time.Time
		wantUntil  time.Time
		wantWake   time.Time
		wantFailed bool
	}{
		"no checks, within the settle time: wait for its end": {
			in: in(rec, t0.Add(time.Second), nil, noChecks), wantStep: settleKeep, wantWake: t0.Add(settle),
		},
		"no checks, at the end: passes": {
			in: in(rec, t0.Add(settle), nil, noChecks), wantStep: settlePass,
		},
		"checks healthy, before the end: wait": {
			in: in(rec, t0.Add(30*time.Second), healthy(t0.Add(30*time.Second))), wantStep: settleKeep, wantWake: t0.Add(settle),
		},
		"past the end, last evaluation before it: wait for the next": {
			in: in(rec, t0.Add(settle+time.Second), healthy(t0.Add(50*time.Second))), wantStep: settleKeep,
		},
		"past the end, healthy evaluation at or after it: passes": {
			in: in(rec, t0.Add(settle), healthy(t0.Add(settle))), wantStep: settlePass,
		},
		"a bad result fails it, timed at the evaluation": {
			in: in(rec, t0.Add(11*time.Second), bad(t0.Add(10*time.Second))), wantStep: settleFail, wantFailed: true,
		},
		"a bad result from before the settle began tells nothing": {
			in: in(rec, t0.Add(time.Second), bad(t0.Add(-time.Second))), wantStep: settleKeep, wantWake: t0.Add(settle),
		},
		"checks that cannot run pass no one, even long after the end": {
			in: in(rec, t0.Add(time.Hour), unavailable(t0.Add(time.Hour))), wantStep: settleKeep,
		},
		"no evaluation yet: no pass": {
			in: in(rec, t0.Add(time.Hour), nil), wantStep: settleKeep,
		},
		"failed, Manual, healthy again: keeps its slot": {
			in: in(failed, t0.Add(time.Hour), healthy(t0.Add(time.Hour))), wantStep: settleKeep,
		},
		"failed, still bad: nothing new is recorded": {
			in: in(failed, t0.Add(time.Hour), bad(t0.Add(time.Hour))), wantStep: settleKeep,
		},
		"failed, resumed at the failure's second: gives up its slot": {
			in: in(failed, t0.Add(time.Hour), bad(t0.Add(time.Hour)), resumeAt(t0.Add(10*time.Second))), wantStep: settleResumed,
		},
		"failed, resumed at a time before the failure: nothing": {
			in: in(failed, t0.Add(time.Hour), nil, resumeAt(t0.Add(9*time.Second))), wantStep: settleKeep,
		},
		"not failed, a resume annotation changes nothing": {
			in: in(rec, t0.Add(time.Second), nil, noChecks, resumeAt(t0.Add(time.Hour))), wantStep: settleKeep, wantWake: t0.Add(settle),
		},
		"failed, OnRecovery, healthy after the failure: settles again": {
			in: in(failed, t0.Add(20*time.Second), healthy(t0.Add(20*time.Second)), onRecovery), wantStep: settleUpdate,
			wantSince: t0.Add(20 * time.Second), wantUntil: t0.Add(20*time.Second + settle), wantWake: t0.Add(20*time.Second + settle), wantFailed: true,
		},
		"failed, OnRecovery, the failing evaluation itself: keeps failing": {
			in: in(failed, t0.Add(20*time.Second), healthy(failure.Time), onRecovery), wantStep: settleKeep,
		},
		"recovered, healthy past its new end: recovered": {
			in: in(recovered, at.Add(settle), healthy(at.Add(settle)), onRecovery), wantStep: settleRecovered,
		},
		"recovered, bad again: fails anew": {
			in: in(recovered, at.Add(time.Second), bad(at.Add(time.Second)), onRecovery), wantStep: settleFail, wantFailed: true,
		},
		"NotReady: the settle time stops, recorded": {
			in:       in(rec, t0.Add(30*time.Second), nil, noChecks, func(i *settleInput) { i.ready = false }),
			wantStep: settleUpdate, wantSince: t0.Add(30 * time.Second),
		},
		"still NotReady: nothing to write": {
			in: in(notReady, t0.Add(40*time.Second), nil, noChecks, func(i *settleInput) { i.ready = false }), wantStep: settleKeep,
		},
		"Ready again: the settle time starts again": {
			in:       in(notReady, t0.Add(40*time.Second), nil, noChecks),
			wantStep: settleUpdate, wantSince: t0.Add(40 * time.Second), wantUntil: t0.Add(40*time.Second + settle), wantWake: t0.Add(40*time.Second + settle),
		},
		"rebooted again: its new boot settles from the start": {
			in:       in(rec, t0.Add(50*time.Second), nil, noChecks, func(i *settleInput) { i.bootID = "boot-2" }),
			wantStep: settleUpdate, wantSince: t0.Add(50 * time.Second), wantUntil: t0.Add(50*time.Second + settle), wantWake: t0.Add(50*time.Second + settle),
		},
		"rebooted again after a failure: the failure stays": {
			in:       in(failed, t0.Add(50*time.Second), nil, func(i *settleInput) { i.bootID = "boot-2" }),
			wantStep: settleUpdate, wantSince: t0.Add(50 * time.Second), wantUntil: t0.Add(50*time.Second + settle), wantWake: t0.Add(50*time.Second + settle), wantFailed: true,
		},
		"the pool's guard removed: released": {
			in: in(failed, t0, nil, func(i *settleInput) { i.guarded = false }), wantStep: settleRelease,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			d := decideSettle(tc.in)
			g.Expect(d.step).To(Equal(tc.wantStep))
			g.Expect(d.wake).To(Equal(tc.wantWake), "wake")
			if d.step == settleUpdate || d.step == settleFail {
				g.Expect(d.next.Failure != nil).To(Equal(tc.wantFailed), "failure recorded")
				g.Expect(d.next.BootID).To(Equal(tc.in.bootID))
			}
			if d.step == settleUpdate {
				g.Expect(d.next.Since).To(Equal(tc.wantSince), "since")
				g.Expect(d.next.Until).To(Equal(tc.wantUntil), "until")
			}
			if d.step == settleFail {
				g.Expect(d.next.Failure.Time).To(Equal(tc.in.health.at))
				g.Expect(d.next.Failure.Value).To(Equal("0"))
				g.Expect(d.next.Failure.Recovered).To(BeNil())
			}
		})
	}
}
