package silences

import (
	"errors"
	"time"

	"github.com/kmaint/kmaint/api/protocol"
)

// Outcome is what a pass's calls to Alertmanager found: the plan's record
// with the IDs and ends they answered, the silences someone else expired
// (Removed), and the calls that failed.
type Outcome struct {
	Made, Extended, Expired, Removed []int
	// Errors are the calls that failed, by entry; an entry of Expire that
	// failed stays in the record.
	Errors map[int]error
}

// Write is the one write a pass ends with: the record (nil: none to write,
// Forget: remove it) and whether it differs from the node's.
type Write struct {
	Record *protocol.SilenceRecord
	Forget bool
}

// Settle completes the plan's record with the outcome of its calls: the
// silences expired leave it, a record of no maintenance goes once none is
// left, Unavailable says why silences could not be made (and whether the
// pool proceeds), and ReadyAt is set once every silence wanted is made or
// removed by someone. A pure function; the caller writes what it returns
// when it differs from the node's record.
func Settle(f Facts, p Plan, o Outcome) Write {
	if p.Record == nil {
		return Write{}
	}
	rec := clone(p.Record)
	kept := rec.Silences[:0:0]
	for i, h := range rec.Silences {
		if isIn(p.Expire, i) && o.Errors[i] == nil {
			continue
		}
		kept = append(kept, h)
	}
	rec.Silences = kept
	if p.Forget {
		if len(rec.Silences) == 0 || allEnded(rec.Silences, f.Now) {
			return Write{Forget: true}
		}
		return Write{Record: rec}
	}
	var failed []error
	for i, err := range o.Errors {
		if !isIn(p.Expire, i) {
			failed = append(failed, err)
		}
	}
	switch {
	case p.Unusable != "":
		rec.Unavailable = unavailable(rec.Unavailable, p.Unusable, f)
	case len(failed) > 0:
		rec.Unavailable = unavailable(rec.Unavailable, errors.Join(failed...).Error(), f)
	default:
		rec.Unavailable = nil
	}
	if rec.ReadyAt.IsZero() && p.Unusable == "" && allMade(rec.Silences) {
		rec.ReadyAt = f.Now
	}
	if len(rec.Silences) == 0 && rec.Unavailable == nil && f.Record == nil {
		// Nothing asked for and nothing held: no record.
		return Write{}
	}
	return Write{Record: rec}
}

// maxUnavailableMessage bounds the message a record keeps: it is read by
// the gate and shown in the pool's conditions.
const maxUnavailableMessage = 1024

func unavailable(was *protocol.SilencesUnavailable, msg string, f Facts) *protocol.SilencesUnavailable {
	if len(msg) > maxUnavailableMessage {
		msg = msg[:maxUnavailableMessage] + "…"
	}
	u := &protocol.SilencesUnavailable{Message: msg, Since: f.Now, Proceed: f.Proceed}
	if was != nil {
		u.Since = was.Since
	}
	return u
}

func allMade(hs []protocol.HeldSilence) bool {
	for _, h := range hs {
		if h.ID == "" && !h.Removed {
			return false
		}
	}
	return true
}

// allEnded reports whether every silence surely ended, by someone or past
// its end whatever the clocks say: their record may go even when the
// calls to expire them failed.
func allEnded(hs []protocol.HeldSilence, now time.Time) bool {
	for _, h := range hs {
		if !h.Removed && now.Before(h.EndsAt.Add(clockSkew)) {
			return false
		}
	}
	return true
}

func isIn(is []int, i int) bool {
	for _, j := range is {
		if j == i {
			return true
		}
	}
	return false
}
