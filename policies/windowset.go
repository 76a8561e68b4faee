package policies

import (
	"fmt"
	"time"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// maxIntersect bounds the search for a moment when several sets of windows
// are open together; sets that never meet then report no next opening.
const maxIntersect = 1000

// ParseWindows parses a list of windows; the error names the first that
// cannot be read by its index, e.g. "windows[2]: ...".
func ParseWindows(ws []v1alpha1.MaintenanceWindow) ([]Window, error) {
	out := make([]Window, 0, len(ws))
	for i, w := range ws {
		parsed, err := ParseWindow(w)
		if err != nil {
			return nil, fmt.Errorf("windows[%d]: %w", i, err)
		}
		out = append(out, parsed)
	}
	return out, nil
}

// AllOpen evaluates sets of windows that must all be open at once, each set
// open while any of its windows is (AnyOpen; an empty set is always open).
// Closed, Next is the first moment every set is open together: zero when
// they do not meet within the search bound.
func AllOpen(now time.Time, sets ...[]Window) WindowState {
	t := now
	for range maxIntersect {
		var until, later time.Time
		open := true
		for _, set := range sets {
			s := AnyOpen(set, t)
			switch {
			case s.Open:
				// A zero Until is a set without windows: open for ever.
				if !s.Until.IsZero() && (until.IsZero() || s.Until.Before(until)) {
					until = s.Until
				}
			case s.Next.IsZero():
				return WindowState{}
			default:
				open = false
				// Nothing can be open together before every closed set
				// opens, so the search jumps to the latest such opening.
				if s.Next.After(later) {
					later = s.Next
				}
			}
		}
		if open {
			if t.Equal(now) {
				return WindowState{Open: true, Until: until}
			}
			return WindowState{Next: t}
		}
		t = later
	}
	return WindowState{}
}
