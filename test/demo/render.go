package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// display shows the cluster: on a terminal a frame redrawn in place (pools'
// progress bars and a node table), elsewhere one line per node that changed.
type display struct {
	out   io.Writer
	live  bool
	start time.Time
	// lines is the height of the last frame drawn, to draw over it.
	lines int
	// shown is each node as last reported, to tell what changed.
	shown map[string]nodeRow
}

// redrawEvery is how often a live frame is redrawn.
const redrawEvery = 500 * time.Millisecond

// maxRows bounds the node table so that a frame fits a terminal.
const maxRows = 16

func newDisplay(out io.Writer, live bool, start time.Time) *display {
	return &display{out: out, live: live, start: start, shown: map[string]nodeRow{}}
}

// untilDone shows the cluster until the expected requests are done, and
// returns the last state and when the demo saw it done. It returns a zero
// time when ctx ended first.
func (d *display) untilDone(ctx context.Context, w *watcher, expected int) (view, clusterState, time.Time, error) {
	var tick <-chan time.Time
	if d.live {
		fmt.Fprint(d.out, "\x1b[?25l") // hide the cursor while redrawing
		defer fmt.Fprint(d.out, "\x1b[?25h")
		t := time.NewTicker(redrawEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		s, err := w.state(ctx)
		if err != nil {
			return view{}, s, time.Time{}, err
		}
		v := buildView(s)
		d.report(v)
		done := v.done(expected)
		now := time.Now()
		if d.live && (done || d.lines == 0) {
			d.draw(v, now)
		}
		if done {
			return v, s, now, nil
		}
		if !d.waitForChange(ctx, w, tick, v) {
			return v, s, time.Time{}, nil
		}
	}
}

// waitForChange waits for the cluster to change, redrawing v on every tick
// meanwhile. It reports false when ctx ended first.
func (d *display) waitForChange(ctx context.Context, w *watcher, tick <-chan time.Time, v view) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-w.changed:
			return true
		case now := <-tick:
			d.draw(v, now)
		}
	}
}

// follow prints one line per node that changes until ctx ends.
func (d *display) follow(ctx context.Context, w *watcher) error {
	d.live = false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.changed:
		}
		s, err := w.state(ctx)
		if err != nil {
			return err
		}
		d.report(buildView(s))
	}
}

// report notes the nodes whose step or source changed, and prints a line for
// each unless the view is live.
func (d *display) report(v view) {
	pools := map[string]poolRow{}
	for _, p := range v.pools {
		pools[p.name] = p
	}
	for _, n := range v.nodes {
		was, seen := d.shown[n.name]
		d.shown[n.name] = n
		if (!seen && n.step == stepIdle) || (seen && was.step == n.step && was.source == n.source) || d.live {
			continue
		}
		line := fmt.Sprintf("%8s  %-12s %-8s %-10s %-11s", "+"+elapsed(time.Since(d.start)), n.name, n.pool, n.step, n.source)
		if p, ok := pools[n.pool]; ok {
			line += fmt.Sprintf("  %s %d/%d back, unavailable %d/%d", p.name, p.back, p.todo, p.unavailable, p.maxUnavailable)
		}
		fmt.Fprintln(d.out, strings.TrimRight(line, " "))
	}
}

// draw redraws the live frame over the last one.
func (d *display) draw(v view, now time.Time) {
	var b strings.Builder
	if d.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dA\r\x1b[J", d.lines) // up to the last frame's top, and clear below
	}
	fmt.Fprintf(&b, "elapsed %s   requests %d, %d open\n\n", elapsed(now.Sub(d.start)), v.requests, v.open)
	for _, p := range v.pools {
		limit := fmt.Sprint(p.maxUnavailable)
		if strings.HasSuffix(p.spec, "%") {
			limit += " (" + p.spec + ")"
		}
		fmt.Fprintf(&b, "%-8s %s %-11s unavailable %d/%s\n", p.name, bar(p.back+p.failed, p.todo, 24), fmt.Sprintf("%d/%d back", p.back, p.todo), p.unavailable, limit)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "%-12s %-8s %-10s %-11s %s\n", "NODE", "POOL", "STEP", "SOURCE", "FOR")
	rows, hidden := tableRows(v.nodes)
	for _, n := range rows {
		// phaseTimes have a resolution of a second.
		dur := "-"
		if !n.since.IsZero() {
			dur = fmt.Sprintf("%ds", max(0, int(now.Sub(n.since).Seconds())))
		}
		fmt.Fprintf(&b, "%-12s %-8s %s %-11s %s\n", n.name, n.pool, colored(n.step, fmt.Sprintf("%-10s", n.step)), cmp.Or(n.source, "-"), dur)
	}
	if hidden != "" {
		b.WriteString(hidden + "\n")
	}
	frame := b.String()
	d.lines = strings.Count(frame, "\n")
	fmt.Fprint(d.out, frame)
}

// tableRows picks the nodes a frame has room for: nodes in the middle of a
// reboot first, then nodes back from one, then the rest, each in name order.
func tableRows(nodes []nodeRow) (rows []nodeRow, hidden string) {
	if len(nodes) <= maxRows {
		return nodes, ""
	}
	keep := map[string]bool{}
	for _, pass := range []func(nodeRow) bool{
		func(n nodeRow) bool { return n.step != stepIdle && n.step != stepBack },
		func(n nodeRow) bool { return n.step == stepBack },
		func(nodeRow) bool { return true },
	} {
		for _, n := range nodes {
			if len(keep) < maxRows && pass(n) {
				keep[n.name] = true
			}
		}
	}
	counts := map[step]int{}
	for _, n := range nodes {
		if keep[n.name] {
			rows = append(rows, n)
		} else {
			counts[n.step]++
		}
	}
	var parts []string
	for _, st := range []step{stepIdle, stepRequested, stepWaiting, stepDraining, stepRebooting, stepBack, stepFailed} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	return rows, fmt.Sprintf("... and %d more nodes: %s", len(nodes)-len(rows), strings.Join(parts, ", "))
}

// bar draws done of total as a bar width cells wide.
func bar(done, total, width int) string {
	filled := 0
	if total > 0 {
		filled = min(width, done*width/total)
	}
	return "[" + strings.Repeat("█", filled) + strings.Repeat("░", width-filled) + "]"
}

// stepColors are ANSI SGR codes for the live table.
var stepColors = map[step]string{
	stepIdle: "2", stepRequested: "34", stepWaiting: "33", stepDraining: "36",
	stepRebooting: "35", stepBack: "32", stepFailed: "31",
}

func colored(st step, s string) string {
	return "\x1b[" + stepColors[st] + "m" + s + "\x1b[0m"
}

// elapsed formats a duration the way the demo prints all of them.
func elapsed(d time.Duration) string {
	switch {
	case d < 0:
		return "0.0s"
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		return d.Round(time.Second).String()
	}
}
