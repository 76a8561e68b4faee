package daemon

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/daemon/sentinel"
)

// sentinelRequestID names the sentinel request of a boot for a fingerprint:
// the same sentinel in the same boot is the same request, so planning it
// again before it is read back journals nothing new.
func sentinelRequestID(bootID, fingerprint string) string {
	sum := sha256.Sum256([]byte(bootID + "/" + fingerprint))
	return "sentinel-" + hex.EncodeToString(sum[:8])
}

// planSentinel decides what the host's reboot sentinel asks for (see
// sentinel.Decide), plans the journaling of a new sentinel request, and
// returns the sentinel's part of the daemon's state; nil when the daemon
// watches no sentinel.
func planSentinel(p *plan, f facts, j journalIndex, old *protocol.DaemonState) *protocol.SentinelStatus {
	if !f.sentinelEnabled {
		return nil
	}
	var remembered *protocol.SentinelRequest
	if old != nil && old.Sentinel != nil {
		remembered = old.Sentinel.LastRequest
	}
	// The boot before's request: from the journal, or, when the journal
	// did not keep it (volatile), from the daemon's state on the Node.
	previous := j.sentinelBefore
	switch {
	case remembered == nil || remembered.BootID == f.bootID:
	case previous == nil:
		previous = &sentinel.Request{ID: remembered.ID, BootID: remembered.BootID, Fingerprint: remembered.Fingerprint, Latest: remembered.Latest}
	case previous.ID == remembered.ID:
		// Only the Node knows what the sentinel became after it asked.
		withLatest := *previous
		withLatest.Latest = remembered.Latest
		previous = &withLatest
	}
	d := sentinel.Decide(sentinel.Input{BootID: f.bootID, Observation: f.sentinel, ThisBoot: j.sentinelThisBoot, Previous: previous})

	st := &protocol.SentinelStatus{State: d.State, Message: d.Message, Since: f.now}
	if d.State == "" {
		st.State, st.Message = protocol.SentinelUnknown, "not looked at yet in this boot"
	}
	if f.sentinel != nil && f.sentinel.Needed {
		st.Fingerprint = f.sentinel.Fingerprint
	}
	switch {
	case d.Request:
		id := sentinelRequestID(f.bootID, f.sentinel.Fingerprint)
		e := journal.Entry{Kind: journal.KindRequest, ID: id, Source: v1alpha1.SourceSentinel,
			Reason: v1alpha1.FitReason(f.sentinel.Reason), Sentinel: f.sentinel.Fingerprint, Time: f.now}
		p.write = append(p.write, write{entry: e})
		st.LastRequest = &protocol.SentinelRequest{BootID: f.bootID, ID: id, Fingerprint: f.sentinel.Fingerprint}
	case len(j.sentinelThisBoot) > 0:
		r := j.sentinelThisBoot[len(j.sentinelThisBoot)-1]
		st.LastRequest = &protocol.SentinelRequest{BootID: r.BootID, ID: r.ID, Fingerprint: r.Fingerprint}
		if remembered != nil && remembered.ID == r.ID {
			st.LastRequest.Latest = remembered.Latest
		}
		// While this boot's request stands, remember what the sentinel
		// turns into: that is what the reboot is to clear.
		if d.State == protocol.SentinelRequested && st.Fingerprint != "" && st.Fingerprint != r.Fingerprint {
			st.LastRequest.Latest = st.Fingerprint
		}
	case previous != nil:
		st.LastRequest = &protocol.SentinelRequest{BootID: previous.BootID, ID: previous.ID, Fingerprint: previous.Fingerprint, Latest: previous.Latest}
	}
	if old != nil && old.Sentinel != nil && old.BootID == f.bootID && old.Sentinel.State == st.State && !old.Sentinel.Since.IsZero() {
		st.Since = old.Sentinel.Since
	}
	entered := old == nil || old.Sentinel == nil || old.BootID != f.bootID || old.Sentinel.State != st.State
	p.sentinelEntered = entered && (st.State == protocol.SentinelRebootLoop || st.State == protocol.SentinelError)
	return st
}

// sameSentinel reports whether two sentinel states say the same, their
// times aside.
func sameSentinel(a, b *protocol.SentinelStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.State == b.State && a.Message == b.Message && a.Fingerprint == b.Fingerprint &&
		(a.LastRequest == nil) == (b.LastRequest == nil) && (a.LastRequest == nil || *a.LastRequest == *b.LastRequest)
}
