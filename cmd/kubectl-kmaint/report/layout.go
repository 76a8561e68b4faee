package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// The page's geometry, in SVG user units (pixels at 100%).
const (
	pageWidth   = 1200
	labelWidth  = 200
	plotWidth   = pageWidth - labelWidth - 24
	axisHeight  = 26
	groupHeight = 26
	rowHeight   = 18
	// Past compactRows rows a row is a thin strip without its own label:
	// the page stays a page, and hovering still names every bar.
	compactRows      = 300
	compactRowHeight = 5
	chartHeight      = 110
	chartPlotTop     = 12
	chartPlotBottom  = 90
)

// scale maps times to x coordinates of the plot.
type scale struct {
	span Interval
}

func (s scale) x(t time.Time) float64 {
	f := float64(t.Sub(s.span.Start)) / float64(s.span.Duration())
	return labelWidth + f*plotWidth
}

// tick is one labelled time on the axis.
type tick struct {
	X     float64
	Label string
}

// tickSteps are the steps an axis may use, smallest first.
var tickSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 28 * 24 * time.Hour,
}

// ticks picks the smallest step that gives at most max ticks over the span,
// at multiples of the step (in UTC).
func ticks(s scale, maxTicks int) []tick {
	d := s.span.Duration()
	step := tickSteps[len(tickSteps)-1]
	for _, st := range tickSteps {
		if d/st <= time.Duration(maxTicks) {
			step = st
			break
		}
	}
	layout := "15:04"
	switch {
	case d >= 24*time.Hour:
		layout = "Jan 2 15:04"
	case step < time.Minute:
		layout = "15:04:05"
	}
	var out []tick
	for t := s.span.Start.UTC().Truncate(step); !t.After(s.span.End); t = t.Add(step) {
		if t.Before(s.span.Start) {
			continue
		}
		out = append(out, tick{X: s.x(t), Label: t.UTC().Format(layout)})
	}
	return out
}

// human formats a duration for people: 850ms, 12s, 3m04s, 2h05m, 3d04h.
func human(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	d = d.Round(time.Hour)
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// kindLabel is how the page names a kind of stretch.
func kindLabel(k string) string {
	switch Kind(k) {
	case KindDaemon:
		return "waiting for the daemon"
	case KindGate:
		return "waiting for the gate"
	case KindDraining:
		return "draining"
	case KindRebooting:
		return "rebooting"
	case KindSettling:
		return "settling (back, checks running)"
	case KindBeforeDrain:
		return "at hooks before the drain"
	case KindBeforeReboot:
		return "at hooks before the reboot"
	case KindAfterReboot:
		return "at hooks after the reboot"
	case "unavailable":
		return "unavailable (admitted → back)"
	case "total":
		return "total (asked → back)"
	}
	return k
}

// describe is a maintenance's hover text: what, why, and how long each
// stretch took.
func describe(t *Timeline) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %s: %s\n", t.Name, t.Node, t.Phase)
	fmt.Fprintf(&b, "source %s", t.Source)
	if t.Policy != "" {
		fmt.Fprintf(&b, " (policy %s)", t.Policy)
	}
	fmt.Fprintf(&b, "\nreason: %s\n", t.Reason)
	for _, s := range t.Segments {
		fmt.Fprintf(&b, "%s %s (%s–%s)", kindLabel(string(s.Kind)), human(s.Duration()), clock(s.Start), clock(s.End))
		if len(s.Hooks) > 0 {
			fmt.Fprintf(&b, " [%s]", strings.Join(s.Hooks, ", "))
		}
		if s.Open {
			b.WriteString(", still")
		}
		b.WriteString("\n")
	}
	if !t.CheckFailed.IsZero() {
		fmt.Fprintf(&b, "health check failed at %s (%s): %s\n", clock(t.CheckFailed), t.CheckReason, t.CheckMessage)
	}
	switch t.Phase {
	case v1alpha1.PhaseSucceeded:
		fmt.Fprintf(&b, "back at %s after %s", clock(t.Back), human(t.Back.Sub(t.Start())))
		if t.BootBefore != "" || t.BootAfter != "" {
			fmt.Fprintf(&b, ", boot %s → %s", short(t.BootBefore), short(t.BootAfter))
		}
	case v1alpha1.PhaseFailed:
		fmt.Fprintf(&b, "failed at %s: %s", clock(t.Failed), t.FailReason)
		if t.FailMessage != "" {
			fmt.Fprintf(&b, ": %s", t.FailMessage)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05") }

// short abbreviates a boot ID.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// ellipsis cuts s to n runes.
func ellipsis(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
