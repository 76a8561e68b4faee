package policies

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// maxChain bounds how many overlapping starts are followed when working out
// until when a window stays open (e.g. a start every minute with an hour's
// duration never closes; the answer is then "at least this long").
const maxChain = 10000

// Window is a maintenance window ready to be evaluated.
type Window struct {
	schedule cron.Schedule
	duration time.Duration
}

// ParseWindow checks a window's schedule, time zone and duration. The
// schedule is read in the window's time zone (UTC by default), so a window
// at 02:00 Europe/Berlin opens at 02:00 local time in winter and in summer.
func ParseWindow(w v1alpha1.MaintenanceWindow) (Window, error) {
	sched, err := parseCron(w.Schedule, w.TimeZone)
	if err != nil {
		return Window{}, err
	}
	if w.Duration.Duration <= 0 {
		return Window{}, fmt.Errorf("duration %s must be positive", w.Duration.Duration)
	}
	return Window{schedule: sched, duration: w.Duration.Duration}, nil
}

// parseCron reads a five-field cron expression in an IANA time zone (UTC
// when empty). It accepts exactly what the API documents: five fields, the
// zone in its own field, and a schedule that fires at all. Descriptors
// (@every, @daily), a CRON_TZ= prefix and the zone "Local" (the operator's
// own machine's) would each be read in a way a person did not mean.
func parseCron(expr, tz string) (cron.Schedule, error) {
	if tz == "" {
		tz = "UTC"
	}
	if tz == "Local" {
		return nil, errors.New(`timeZone "Local" is the operator machine's zone, not the nodes': name an IANA time zone such as Europe/Berlin, or UTC`)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("timeZone %q is not a known IANA time zone: %w", tz, err)
	}
	if strings.Contains(expr, "TZ=") {
		return nil, fmt.Errorf("schedule %q names a time zone: give it in timeZone, and five fields here", expr)
	}
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
	sched, err := parser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("schedule %q is not a five-field cron expression: %w", expr, err)
	}
	spec, ok := sched.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("schedule %q is not a five-field cron expression", expr)
	}
	spec.Location = loc
	// Every date a five-field schedule names comes within five years of
	// the start of a leap year; one that does not never fires (30 February).
	if spec.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, loc)).IsZero() {
		return nil, fmt.Errorf("schedule %q never fires: no date matches it", expr)
	}
	return spec, nil
}

// WindowState is what a window says at one moment.
type WindowState struct {
	// Open is true while the window is open.
	Open bool
	// Until is when an open window closes.
	Until time.Time
	// Next is when a closed window opens next; zero if it never does.
	Next time.Time
}

// State evaluates the window at now. A window is open when one of its starts
// lies in (now-duration, now]; durations are elapsed time, so a 4h window
// that spans a daylight-saving change still lasts four hours.
func (w Window) State(now time.Time) WindowState {
	start := w.schedule.Next(now.Add(-w.duration))
	if start.IsZero() {
		return WindowState{}
	}
	if start.After(now) {
		return WindowState{Next: start}
	}
	// Open: follow the starts that keep it open, to the last one.
	until := start.Add(w.duration)
	for range maxChain {
		next := w.schedule.Next(start)
		if next.IsZero() || next.After(until) {
			break
		}
		start, until = next, next.Add(w.duration)
	}
	return WindowState{Open: true, Until: until}
}

// AnyOpen evaluates several windows together: open while any one is open.
// No windows at all means always open.
func AnyOpen(windows []Window, now time.Time) WindowState {
	if len(windows) == 0 {
		return WindowState{Open: true}
	}
	var out WindowState
	for _, w := range windows {
		s := w.State(now)
		switch {
		case s.Open && (!out.Open || s.Until.After(out.Until)):
			out = WindowState{Open: true, Until: s.Until}
		case !out.Open && !s.Next.IsZero() && (out.Next.IsZero() || s.Next.Before(out.Next)):
			out.Next = s.Next
		}
	}
	return out
}
