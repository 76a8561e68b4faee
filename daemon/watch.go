package daemon

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/daemon/sentinel"
)

// watchSentinel looks at the sentinel now and then every sentinelInterval
// until ctx is done, and wakes a sync when what it says changed. Polling a
// file is a stat and, when present, two small reads: cheap at any sensible
// interval, and unlike inotify it needs no watch on a host directory that
// may not exist yet, and sees a file replaced under a bind mount.
func (a *agent) watchSentinel(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("sentinel")
	t := time.NewTicker(a.sentinelInterval)
	defer t.Stop()
	for {
		o := a.sentinel.Check(ctx)
		if ctx.Err() != nil {
			return nil
		}
		a.mu.Lock()
		changed := a.observed == nil || *a.observed != o
		a.observed = &o
		a.mu.Unlock()
		// Nothing known yet is no look at all: the sentinel stays unknown
		// in this boot (lastObservation).
		if changed {
			log.Info("Reboot sentinel", "needed", o.Needed, "fingerprint", o.Fingerprint, "reason", o.Reason, "problem", o.Problem)
			a.wake()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// lastObservation is the sentinel's last look; nil before the first.
func (a *agent) lastObservation() *sentinel.Observation {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.observed == nil {
		return nil
	}
	o := *a.observed
	if o.Pending {
		return nil
	}
	return &o
}

// tellSentinel says, on the Node and in the log, that the sentinel turned
// into a state where it wants a reboot it does not ask for: a reboot loop
// held back (RebootLoop), or a sentinel that cannot be read
// (SentinelUnreadable).
func (a *agent) tellSentinel(ctx context.Context, node *corev1.Node, st *protocol.SentinelStatus) {
	reason := "SentinelUnreadable"
	if st.State == protocol.SentinelRebootLoop {
		reason = "RebootLoop"
	}
	ctrl.LoggerFrom(ctx).Info("Reboot sentinel held", "reason", reason, "message", st.Message)
	a.recorder.Eventf(node, nil, corev1.EventTypeWarning, reason, "Sentinel", "%s", st.Message)
}
