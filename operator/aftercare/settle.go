package aftercare

import (
	"time"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// settleStep is what aftercare does to a settling node.
type settleStep int

const (
	// settleKeep writes nothing: the node keeps settling as recorded.
	settleKeep settleStep = iota
	// settleUpdate writes the new record (a settle time that starts again).
	settleUpdate
	// settleFail writes the record with a new failure: the pool halts.
	settleFail
	// settlePass removes the record: the node settled (Settled).
	settlePass
	// settleRecovered removes the record: the node failed, recovered and
	// settled again (HealthCheckRecovered).
	settleRecovered
	// settleResumed removes the record: a person resumed the pool after
	// the node failed (HaltResumed).
	settleResumed
	// settleRelease removes the record: the pool no longer has a settle
	// time or health checks.
	settleRelease
)

// settleInput is what decides a settling node's next step.
type settleInput struct {
	now time.Time
	// rec is the node's record, as it was last written.
	rec protocol.Settle
	// node is the node's name, bootID the boot it runs, ready whether it
	// is Ready.
	node   string
	bootID string
	ready  bool
	// guarded is the pool's spec.Guarded(), settle its settle time.
	guarded bool
	settle  time.Duration
	// checks is true when the pool has health checks; health is their
	// latest evaluation (nil when none ran yet).
	checks bool
	health *healthResult
	// resume is the pool's healthChecks.resume, resumeAt the time its
	// kmaint.io/resume-halt annotation holds (zero when none).
	resume   v1alpha1.HaltResume
	resumeAt time.Time
}

// settleDecision is the step, the record to write for settleUpdate and
// settleFail, and when to look again at the latest (zero: no need to).
type settleDecision struct {
	step settleStep
	next protocol.Settle
	wake time.Time
}

// decideSettle decides what becomes of a settling node. It passes at the
// end of its settle time when no evaluation of the checks since it began
// found it bad and one at or after its end found it healthy; it fails at
// the first evaluation that finds it bad, and keeps its slot until its
// pool is resumed (any pool) or it recovers (OnRecovery). A node that goes
// NotReady, or reboots again, starts its settle time again when it is
// Ready: each of those is written on the node, so a restarted operator
// goes on from there. Checks that cannot run pass no one.
func decideSettle(in settleInput) settleDecision {
	rec := in.rec
	restart := func() settleDecision {
		rec.Since, rec.Until = in.now, in.now.Add(in.settle)
		if !in.ready {
			rec.Until = time.Time{}
		}
		return settleDecision{step: settleUpdate, next: rec, wake: rec.Until}
	}
	failed := rec.Failure != nil && rec.Failure.Recovered == nil
	switch {
	case !in.guarded:
		return settleDecision{step: settleRelease}
	case rec.Failure != nil && resumes(in.resumeAt, rec.Failure.Time):
		return settleDecision{step: settleResumed}
	case rec.BootID != in.bootID:
		// Rebooted again while it settled: its new boot settles from the
		// start. A failure stays: only a resume or a recovery lifts it.
		rec.BootID = in.bootID
		return restart()
	case !in.ready && rec.Until.IsZero():
		return settleDecision{step: settleKeep}
	case !in.ready, rec.Until.IsZero():
		return restart()
	}

	h := in.health
	// Only an evaluation made since the settle time began tells of it.
	evaluated := in.checks && h != nil && h.err == "" && !h.at.Before(rec.Since)
	if evaluated {
		if bad, ok := h.bad[in.node]; ok {
			if failed {
				return settleDecision{step: settleKeep} // still bad; recorded already
			}
			rec.Failure = &protocol.HealthCheckFailure{Check: bad.check, Value: bad.value, Series: bad.series, Time: h.at}
			return settleDecision{step: settleFail, next: rec}
		}
		if failed && in.resume == v1alpha1.ResumeOnRecovery && h.at.After(rec.Failure.Time) {
			f := *rec.Failure
			at := h.at
			f.Recovered = &at
			rec.Failure = &f
			return restart()
		}
	}
	switch {
	case failed:
		return settleDecision{step: settleKeep}
	case in.now.Before(rec.Until):
		return settleDecision{step: settleKeep, wake: rec.Until}
	case in.checks && (!evaluated || h.at.Before(rec.Until)):
		// The next evaluation tells; the health phase wakes for it.
		return settleDecision{step: settleKeep}
	case rec.Failure != nil:
		return settleDecision{step: settleRecovered}
	default:
		return settleDecision{step: settlePass}
	}
}

// resumes reports whether a resume at resumeAt (zero: none) lifts a
// failure at failedAt. Status times have whole seconds, and a person (or
// the plugin) copies the failure's time from status.halt.
func resumes(resumeAt, failedAt time.Time) bool {
	return !resumeAt.IsZero() && !resumeAt.Before(failedAt.Truncate(time.Second))
}
