package poolstatus

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// DefaultInterval is the least time between two writes of a pool's
// status that only change its counts and messages.
const DefaultInterval = time.Second

// pace spaces out a pool's status writes. In a large rollout the
// pool's counts change with every node event, many times a second; each
// change written was a request to the API server and an event to every
// watcher of pools. A write that changes what the pool's state is (a
// condition's status or reason, a halt, a freeze, a blocking query, the
// generation observed) is never held back; one that only moves counts
// waits until the interval since the last write has passed, and the pool
// is reconciled then to write it.
type pace struct {
	mu   sync.Mutex
	last map[types.UID]time.Time
}

func newPace() *pace { return &pace{last: map[types.UID]time.Time{}} }

// wait returns how long the write of after, following before, should wait;
// 0 to write it now. It measures real time: pacing is about the load on the
// API server, not a decision about reboots.
func (p *pace) wait(uid types.UID, before, after *v1alpha1.MaintenancePoolStatus, interval time.Duration, now time.Time) time.Duration {
	if stateChanged(before, after) {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if since := now.Sub(p.last[uid]); since < interval {
		return interval - since
	}
	return 0
}

// wrote records a write of the pool's status at now.
func (p *pace) wrote(uid types.UID, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, t := range p.last {
		if now.Sub(t) > time.Hour {
			delete(p.last, k) // a pool deleted since
		}
	}
	p.last[uid] = now
}

// stateChanged reports whether after says something other than before
// about the pool's state, beyond its counts and the messages that quote
// them.
func stateChanged(before, after *v1alpha1.MaintenancePoolStatus) bool {
	if before == nil || after == nil {
		return true
	}
	if before.ObservedGeneration != after.ObservedGeneration || before.MaxUnavailable != after.MaxUnavailable ||
		(before.Halt == nil) != (after.Halt == nil) || (before.Freeze == nil) != (after.Freeze == nil) ||
		(before.BlockingQuery == nil) != (after.BlockingQuery == nil) || (before.Canaries == nil) != (after.Canaries == nil) ||
		len(before.Conditions) != len(after.Conditions) {
		return true
	}
	for i, c := range after.Conditions {
		b := before.Conditions[i]
		if b.Type != c.Type || b.Status != c.Status || b.Reason != c.Reason {
			return true
		}
	}
	return false
}
