package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/policies"
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
	// shownCandidate is each node's candidate state as last reported.
	shownCandidate map[string]string
	// shownOutcome holds the policy's outcomes reported, by request and
	// value after.
	shownOutcome map[string]bool
	// windowOpen is the policy's window as last reported.
	windowOpen bool
	// rolloutEnd is when the demo first saw the host and config requests
	// done.
	rolloutEnd time.Time
	// shownHalt and shownResume are each pool's halt and resume-halt
	// annotation as last reported.
	shownHalt, shownResume map[string]string
	// haltedSince is when each halted pool was first seen halted; halted
	// sums each pool's halts that lifted: the time it waited for a person,
	// which the summary's ideal counts.
	haltedSince map[string]time.Time
	halted      map[string]time.Duration
	// planned are the nodes the demo means to reboot, the pools'
	// progress counters' denominators (goal.nodes).
	planned []string
}

// redrawEvery is how often a live frame is redrawn.
const redrawEvery = 500 * time.Millisecond

// maxRows bounds the node table so that a frame fits a terminal.
const maxRows = 16

func newDisplay(out io.Writer, live bool, start time.Time) *display {
	return &display{out: out, live: live, start: start, shown: map[string]nodeRow{}, shownCandidate: map[string]string{}, shownOutcome: map[string]bool{},
		shownHalt: map[string]string{}, shownResume: map[string]string{},
		haltedSince: map[string]time.Time{}, halted: map[string]time.Duration{}}
}

// untilDone shows the cluster until what the demo waits for is done, and
// returns the last state and when the demo saw it done. It returns a zero
// time when ctx ended first.
func (d *display) untilDone(ctx context.Context, w *watcher, expected goal) (view, clusterState, time.Time, error) {
	d.planned = expected.nodes
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
		v := buildView(s, d.planned)
		d.report(v)
		done := v.settled(expected)
		now := time.Now()
		if d.rolloutEnd.IsZero() && v.rolloutDone(expected) {
			d.rolloutEnd = now
		}
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
		d.report(buildView(s, d.planned))
	}
}

// report notes the nodes whose step, source or reason to wait changed, and
// prints a line for each unless the view is live.
func (d *display) report(v view) {
	pools := map[string]poolRow{}
	for _, p := range v.pools {
		pools[p.name] = p
	}
	for _, n := range v.nodes {
		was, seen := d.shown[n.name]
		d.shown[n.name] = n
		// A reason to wait may be written a moment after the step it
		// belongs to: a new reason is a line of its own.
		newReason := n.waiting != "" && (!seen || was.waiting != n.waiting)
		if n.held != "" && was.held != n.held && !d.live {
			fmt.Fprintf(d.out, "%8s  %-12s %-8s %s\n", "+"+elapsed(time.Since(d.start)), n.name, n.pool, n.held)
		}
		if n.hook != "" && was.hook != n.hook && !d.live {
			fmt.Fprintf(d.out, "%8s  %-12s %-8s %s\n", "+"+elapsed(time.Since(d.start)), n.name, n.pool, n.hook)
		}
		if (!seen && n.step == stepIdle) || (seen && was.step == n.step && was.source == n.source && !newReason) || d.live {
			continue
		}
		line := fmt.Sprintf("%8s  %-12s %-8s %-10s %-11s", "+"+elapsed(time.Since(d.start)), n.name, n.pool, n.step, n.source)
		if p, ok := pools[n.pool]; ok {
			line += fmt.Sprintf("  %s %d/%d back, unavailable %d/%d", p.name, p.back, p.goal, p.unavailable, p.maxUnavailable)
		}
		if n.waiting != "" {
			line += "  (" + n.waiting + ")"
		}
		fmt.Fprintln(d.out, strings.TrimRight(line, " "))
	}
	d.reportHalts(v)
	d.reportPolicy(v)
}

// reportHalts prints a line when a pool halts or its halt lifts, and when
// a person resumes it, unless the view is live.
func (d *display) reportHalts(v view) {
	for _, p := range v.pools {
		at := "+" + elapsed(time.Since(d.start))
		if was := d.shownHalt[p.name]; was != p.halt {
			d.shownHalt[p.name] = p.halt
			d.timeHalt(p.name, p.halt != "", time.Now())
			switch {
			case d.live:
			case p.halt != "":
				fmt.Fprintf(d.out, "%8s  pool %s %s: no node is admitted (condition Halted, event PoolHalted); resume: kubectl kmaint resume %s\n", at, p.name, p.halt, p.name)
			default:
				fmt.Fprintf(d.out, "%8s  pool %s no longer halted: the rollout goes on\n", at, p.name)
			}
		}
		if was := d.shownResume[p.name]; was != p.resumedUpTo {
			d.shownResume[p.name] = p.resumedUpTo
			if !d.live && p.resumedUpTo != "" {
				fmt.Fprintf(d.out, "%8s  pool %s resumed: kubectl kmaint resume %s wrote %s=%s; the failed node gives up its slot\n",
					at, p.name, p.name, v1alpha1.ResumeHaltAnnotation, p.resumedUpTo)
			}
		}
	}
}

// timeHalt keeps how long each pool stood halted: since when it is, and
// the sum of its halts that lifted.
func (d *display) timeHalt(pool string, halted bool, now time.Time) {
	since, was := d.haltedSince[pool]
	switch {
	case halted && !was:
		d.haltedSince[pool] = now
	case !halted && was:
		d.halted[pool] += now.Sub(since)
		delete(d.haltedSince, pool)
	}
}

// haltedFor is how long each pool stood halted up to now.
func (d *display) haltedFor(now time.Time) map[string]time.Duration {
	out := maps.Clone(d.halted)
	for pool, since := range d.haltedSince {
		out[pool] += now.Sub(since)
	}
	return out
}

// reportPolicy prints a line when a node becomes the policy's candidate or
// changes state, and when the policy's window opens or closes, unless the
// view is live.
func (d *display) reportPolicy(v view) {
	if v.policy == nil {
		return
	}
	now := time.Now()
	if ws := v.policy.window(now); ws.Open != d.windowOpen {
		d.windowOpen = ws.Open
		if !d.live {
			fmt.Fprintf(d.out, "%8s  window of policy %s: %s\n", "+"+elapsed(now.Sub(d.start)), v.policy.name, windowText(ws, now))
		}
	}
	for _, o := range v.policy.outcomes {
		key := o.NodeMaintenance + "/" + o.ValueAfter
		if d.shownOutcome[key] || o.ValueAfter == "" || d.live {
			continue
		}
		d.shownOutcome[key] = true
		fmt.Fprintf(d.out, "%8s  %-12s policy %s: outcome of the reboot: fragmentation %s → %s\n", "+"+elapsed(now.Sub(d.start)), o.Node,
			v.policy.name, o.ValueBefore, o.ValueAfter)
	}
	for _, n := range v.nodes {
		was := d.shownCandidate[n.name]
		d.shownCandidate[n.name] = n.candidate.state
		if was == n.candidate.state || d.live {
			continue
		}
		fmt.Fprintf(d.out, "%8s  %-12s %-8s policy %s: %s (fragmentation %s)\n", "+"+elapsed(now.Sub(d.start)), n.name, n.pool,
			v.policy.name, candidateText(n.candidate, now, d.start), fragText(n))
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
		line := fmt.Sprintf("%-8s %s %-11s unavailable %d/%s", p.name, bar(p.back+p.failed, p.goal, 24), fmt.Sprintf("%d/%d back", p.back, p.goal), p.unavailable, limit)
		if p.halt != "" {
			line += "  " + colored(stepFailed, p.halt+"; resume: kubectl kmaint resume "+p.name)
		}
		b.WriteString(line + "\n")
	}
	if p := v.policy; p != nil {
		fmt.Fprintf(&b, "\npolicy %s: %s %s %s for %s\n  window %s\n", p.name, p.query, p.comparison, p.threshold, p.forDur, windowText(p.window(now), now))
	}
	b.WriteString("\n")
	header := fmt.Sprintf("%-12s %-8s %-10s %-11s %-5s", "NODE", "POOL", "STEP", "SOURCE", "FOR")
	if v.policy != nil {
		header += fmt.Sprintf(" %-5s %s", "FRAG", "POLICY")
	}
	b.WriteString(strings.TrimRight(header, " ") + "\n")
	rows, hidden := tableRows(v.nodes)
	for _, n := range rows {
		// phaseTimes have a resolution of a second.
		dur := "-"
		if !n.since.IsZero() {
			dur = fmt.Sprintf("%ds", max(0, int(now.Sub(n.since).Seconds())))
		}
		line := fmt.Sprintf("%-12s %-8s %s %-11s %-5s", n.name, n.pool, colored(n.step, fmt.Sprintf("%-10s", n.step)), cmp.Or(n.source, "-"), dur)
		if v.policy != nil {
			line += fmt.Sprintf(" %-5s %s", fragText(n), policyText(n, v.policy, now, d.start))
		}
		if n.hook != "" {
			line += "  " + n.hook
		}
		if n.held != "" {
			// The reboot sentinel still there after its reboot.
			line += "  " + colored(stepFailed, "reboot loop held (sentinel unchanged)")
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	if hidden != "" {
		b.WriteString(hidden + "\n")
	}
	frame := b.String()
	d.lines = strings.Count(frame, "\n")
	fmt.Fprint(d.out, frame)
}

// windowText says how a window stands at now.
func windowText(ws policies.WindowState, now time.Time) string {
	switch {
	case ws.Open && ws.Until.IsZero():
		return "open"
	case ws.Open:
		return fmt.Sprintf("open until %s UTC (%s left)", ws.Until.UTC().Format(time.TimeOnly), ws.Until.Sub(now).Round(time.Second))
	case ws.Next.IsZero():
		return "shut, never opens"
	default:
		return fmt.Sprintf("shut, opens at %s UTC (in %s)", ws.Next.UTC().Format(time.TimeOnly), ws.Next.Sub(now).Round(time.Second))
	}
}

// fragText is the node's fragmentation, or - while Prometheus has none
// (e.g. the node is rebooting).
func fragText(n nodeRow) string {
	if !n.hasFrag {
		return "-"
	}
	return fmt.Sprintf("%.2f", n.frag)
}

// candidateText is the node's candidate state in words.
func candidateText(c candidateRow, now, start time.Time) string {
	switch {
	case c.state == "":
		return "no longer a candidate"
	case c.state == string(v1alpha1.CandidatePending) && !c.until.IsZero():
		return fmt.Sprintf("pending, qualifies in %s", max(0, c.until.Sub(now)).Round(time.Second))
	case !c.until.IsZero():
		return fmt.Sprintf("%s until +%s", strings.ToLower(c.state), elapsed(c.until.Sub(start)))
	default:
		return strings.ToLower(c.state)
	}
}

// policyText is the node's line in the POLICY column: its candidate state,
// and for a request raised, what it waits for.
func policyText(n nodeRow, p *policyRow, now, start time.Time) string {
	if n.candidate.state == "" {
		if n.hasFrag && n.source == string(v1alpha1.SourceMetric) && n.step == stepBack {
			return "rebooted: fresh memory"
		}
		return ""
	}
	text := candidateText(n.candidate, now, start)
	if n.waiting == v1alpha1.OutsideWindowReason {
		text += ", waiting for the window"
		if ws := p.window(now); !ws.Open && !ws.Next.IsZero() {
			text += fmt.Sprintf(" (opens in %s)", ws.Next.Sub(now).Round(time.Second))
		}
	}
	return text
}

// tableRows picks the nodes a frame has room for: nodes in the middle of a
// reboot first, then nodes back from one, then the rest, each in name order.
func tableRows(nodes []nodeRow) (rows []nodeRow, hidden string) {
	if len(nodes) <= maxRows {
		return nodes, ""
	}
	keep := map[string]bool{}
	for _, pass := range []func(nodeRow) bool{
		func(n nodeRow) bool { return (n.step != stepIdle && n.step != stepBack) || n.candidate.state != "" },
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
	for _, st := range steps() {
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
func stepColor(st step) string {
	switch st {
	case stepPending:
		return "34"
	case stepRequested:
		return "33"
	case stepDraining:
		return "36"
	case stepApproved, stepRebooting:
		return "35"
	case stepSettling:
		return "96"
	case stepBack:
		return "32"
	case stepFailed:
		return "31"
	}
	return "2"
}

func colored(st step, s string) string {
	return "\x1b[" + stepColor(st) + "m" + s + "\x1b[0m"
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
