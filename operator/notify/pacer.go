package notify

import "time"

// Pacer spaces messages: the first after a quiet spell goes at once, the
// next not before Interval has passed since the last. What arrives in
// between waits in the Batch and goes out together, so the rate of
// messages is at most one per Interval whatever the rate of events.
type Pacer struct {
	Interval time.Duration
	last     time.Time
	sent     bool
}

// Wait is how long a message ready now has to wait.
func (p *Pacer) Wait(now time.Time) time.Duration {
	if !p.sent {
		return 0
	}
	return max(0, p.last.Add(p.Interval).Sub(now))
}

// Sent records a message sent (or attempted: a failed send spends its
// turn too, so that a receiver that fails is not asked again at once).
func (p *Pacer) Sent(now time.Time) {
	p.last, p.sent = now, true
}
