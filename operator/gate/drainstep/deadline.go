package drainstep

import (
	"time"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// DeadlineStep is what the gate does with a drain past its timeout.
type DeadlineStep int

const (
	// DeadlineAbandons: uncordon, and fail the requests.
	DeadlineAbandons DeadlineStep = iota
	// DeadlineRetries: uncordon, and admit the node again after the backoff.
	DeadlineRetries
	// DeadlineForces: delete what eviction could not move, and approve.
	DeadlineForces
)

// Deadline is DecideDeadline's answer.
type Deadline struct {
	Step DeadlineStep
	// attempts is how many drains of the node's current requests have
	// timed out, this one included; maxAttempts how many the pool allows.
	Attempts, MaxAttempts int
	// nextAt is when a retried node may be admitted again.
	NextAt time.Time
}

// DecideDeadline decides what happens to a drain that ran past its
// timeout, from the pool's drain options and the retries recorded on the
// node (prev, nil when none): a pure function of its inputs. A retry
// recorded for another boot counts for nothing: that boot's requests were
// satisfied by its reboot. A marking the gate refused is never forced: the
// node would reboot without what the pool wants on it (out of its load
// balancers, say).
func DecideDeadline(opts v1alpha1.DrainOptions, prev *protocol.DrainRetrying, boot string, markingRefused bool, now time.Time) Deadline {
	attempts, backoff := opts.RetryLimits()
	d := Deadline{Step: DeadlineAbandons, Attempts: 1, MaxAttempts: 1}
	switch opts.TimeoutAction() {
	case v1alpha1.DrainForceAction:
		if !markingRefused {
			d.Step = DeadlineForces
		}
	case v1alpha1.DrainRetryAction:
		d.MaxAttempts = attempts
		if prev != nil && prev.BootID == boot {
			d.Attempts = prev.Attempts + 1
		}
		if d.Attempts < d.MaxAttempts {
			d.Step, d.NextAt = DeadlineRetries, now.Add(backoff)
		}
	}
	return d
}
