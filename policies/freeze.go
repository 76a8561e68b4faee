package policies

import (
	"errors"
	"fmt"
	"time"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// maxFreezeChain bounds how many freezes that follow on from one another
// are joined when working out until when a pool stays frozen. A recurring
// freeze that lasts longer than its period never ends; the answer is then
// "at least until", and the gate looks again then.
const maxFreezeChain = 8

// maxFreezeStarts bounds how many overlapping starts of one recurring
// freeze are followed, for the same reason: the cost of evaluating a freeze
// stays small whatever its schedule and duration.
const maxFreezeStarts = 64

// Freeze is a freeze period ready to be evaluated: an absolute range, or a
// recurring one, which is exactly a maintenance window that means "closed".
type Freeze struct {
	// Name and Reason are the freeze's, from its spec.
	Name, Reason string
	// Owner says whose freeze it is, for messages: "pool p" or
	// "RebootPolicy q".
	Owner string

	start, end time.Time
	recurring  *Window
}

// ParseFreeze checks a freeze. An absolute freeze needs an end after its
// start; a recurring one a schedule, time zone and duration that a window
// would accept. owner says whose freeze it is (see Freeze.Owner).
func ParseFreeze(owner string, f v1alpha1.FreezePeriod) (Freeze, error) {
	out := Freeze{Name: f.Name, Reason: f.Reason, Owner: owner}
	absolute := f.Start != nil || f.End != nil
	recurring := f.Schedule != "" || f.Duration != nil
	switch {
	case absolute && recurring:
		return Freeze{}, errors.New("it is both absolute (start, end) and recurring (schedule, duration)")
	case absolute:
		if f.Start == nil || f.End == nil {
			return Freeze{}, errors.New("an absolute freeze needs both start and end")
		}
		if f.TimeZone != "" {
			return Freeze{}, errors.New("timeZone applies to a recurring freeze only")
		}
		if !f.End.After(f.Start.Time) {
			return Freeze{}, fmt.Errorf("end %s is not after start %s", f.End.UTC().Format(time.RFC3339), f.Start.UTC().Format(time.RFC3339))
		}
		out.start, out.end = f.Start.Time, f.End.Time
		return out, nil
	case recurring:
		if f.Duration == nil {
			return Freeze{}, errors.New("a recurring freeze needs a duration")
		}
		w, err := ParseWindow(v1alpha1.MaintenanceWindow{Schedule: f.Schedule, Duration: *f.Duration, TimeZone: f.TimeZone})
		if err != nil {
			return Freeze{}, err
		}
		out.recurring = &w
		return out, nil
	default:
		return Freeze{}, errors.New("it is neither absolute (start and end) nor recurring (schedule and duration)")
	}
}

// ParseFreezes parses the freezes of one owner; the error names the first
// that cannot be read, e.g. `freeze "fridays": timeZone ...`. One freeze
// that cannot be read makes the whole list fail: its owner is then frozen
// (see FreezeState.Err), never taken for unfrozen.
func ParseFreezes(owner string, fs []v1alpha1.FreezePeriod) ([]Freeze, error) {
	out := make([]Freeze, 0, len(fs))
	for _, f := range fs {
		parsed, err := ParseFreeze(owner, f)
		if err != nil {
			return nil, fmt.Errorf("freeze %q of %s cannot be read: %w", f.Name, owner, err)
		}
		out = append(out, parsed)
	}
	return out, nil
}

// in reports whether the freeze is in force at now and, if so, until when
// (a recurring freeze's overlapping starts joined), or else when it next
// starts (zero if never). endless is true when its starts were followed as
// far as the bound allows: it lasts at least until then.
func (f Freeze) in(now time.Time) (frozen bool, until, next time.Time, endless bool) {
	if f.recurring == nil {
		switch {
		case now.Before(f.start):
			return false, time.Time{}, f.start, false
		case now.Before(f.end):
			return true, f.end, time.Time{}, false
		default:
			return false, time.Time{}, time.Time{}, false
		}
	}
	w := f.recurring
	start := w.schedule.Next(now.Add(-w.duration))
	switch {
	case start.IsZero():
		return false, time.Time{}, time.Time{}, false
	case start.After(now):
		return false, time.Time{}, start, false
	}
	// In force: follow the starts that keep it so, within a bound (a
	// start every minute for a year would be half a million of them).
	until = start.Add(w.duration)
	for range maxFreezeStarts {
		next := w.schedule.Next(start)
		if next.IsZero() || next.After(until) {
			return true, until, time.Time{}, false
		}
		start, until = next, next.Add(w.duration)
	}
	return true, until, time.Time{}, true
}

// FreezeState is what a set of freezes says at one moment.
type FreezeState struct {
	// Frozen is true while a freeze is in force, or one cannot be read.
	Frozen bool
	// Freeze is the freeze in force (the one that lasts longest); zero
	// when none is, or Err says why none can be told.
	Freeze Freeze
	// Until is when the freezes in force end: the end of their union,
	// freezes that start as another ends joined. Zero while Err is set.
	Until time.Time
	// Next is, while not frozen, when the next freeze starts; zero if none
	// ever does.
	Next time.Time
	// Err says why a freeze cannot be read: the owner is frozen (fail
	// closed) until it can.
	Err error
}

// FrozenAt evaluates freezes at now: frozen while any one is in force
// (start <= now < end), until the end of the chain of freezes that overlap
// or follow on without a gap. Durations are elapsed time, as for windows, so
// a 72h freeze that spans a daylight-saving change lasts 72 hours.
func FrozenAt(freezes []Freeze, now time.Time) FreezeState {
	out := FreezeState{}
	endless := false
	for _, f := range freezes {
		frozen, until, next, bounded := f.in(now)
		endless = endless || bounded
		switch {
		case frozen && (!out.Frozen || until.After(out.Until)):
			out.Frozen, out.Freeze, out.Until = true, f, until
		case !frozen && !next.IsZero() && (out.Next.IsZero() || next.Before(out.Next)):
			out.Next = next
		}
	}
	if !out.Frozen {
		return out
	}
	out.Next = time.Time{}
	// Another freeze in force where this one ends extends it; once one is
	// followed as far as the bound allows, the end is "at least" anyway.
	for range maxFreezeChain {
		if endless {
			break
		}
		var later time.Time
		later, endless = latestEnd(freezes, out.Until)
		if later.IsZero() {
			break
		}
		out.Until = later
	}
	return out
}

// latestEnd returns the latest end of the freezes in force at t (zero when
// none is), and whether one of them was followed as far as the bound
// allows.
func latestEnd(freezes []Freeze, t time.Time) (latest time.Time, endless bool) {
	for _, f := range freezes {
		frozen, until, _, bounded := f.in(t)
		if frozen && until.After(latest) {
			latest = until
		}
		endless = endless || bounded && frozen
	}
	return latest, endless
}

// EvaluateFreezes parses an owner's freezes and evaluates them at now; a
// freeze that cannot be read freezes the owner, with Err saying why.
func EvaluateFreezes(owner string, fs []v1alpha1.FreezePeriod, now time.Time) FreezeState {
	parsed, err := ParseFreezes(owner, fs)
	if err != nil {
		return FreezeState{Frozen: true, Err: err}
	}
	return FrozenAt(parsed, now)
}

// Describe says what holds requests, for a condition: "pool p's freeze
// black-friday (shopping season) until 2026-11-30T00:00:00Z", or why a
// freeze cannot be read.
func (s FreezeState) Describe() string {
	if s.Err != nil {
		return s.Err.Error() + "; nothing it holds is admitted until it can be read"
	}
	if !s.Frozen {
		return ""
	}
	msg := fmt.Sprintf("%s's freeze %s", s.Freeze.Owner, s.Freeze.Name)
	if s.Freeze.Reason != "" {
		msg += " (" + s.Freeze.Reason + ")"
	}
	return msg + " until " + s.Until.UTC().Format(time.RFC3339)
}
