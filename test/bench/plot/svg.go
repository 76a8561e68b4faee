package main

import (
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strings"
)

// series is one line of a panel: a figure of every result.
type series struct {
	name, color string
	value       func(result) float64
	// atLeast: the figure of an unfinished result is only a lower bound
	// (makespan), labelled "≥".
	atLeast bool
	// finishedOnly: an unfinished result's figure says nothing and is not
	// drawn. Requests per reboot count the work for every node, rebooted
	// or not, over the nodes that rebooted; the ideal with drains takes
	// the drains of the nodes that got that far.
	finishedOnly bool
}

// measured returns the results that have the series' figure: every figure
// is above zero once measured, and a result made before the bench measured
// it (slot to admission, the ideal with drains) has none, which is not
// drawn as a zero.
func (s series) measured(results []result) []result {
	var out []result
	for _, r := range results {
		if s.value(r) > 0 && !(s.finishedOnly && r.Unfinished) {
			out = append(out, r)
		}
	}
	return out
}

// goal is one of the goals: y or less at a number of nodes, or at
// every size when nodes is 0.
type goal struct {
	nodes int
	y     float64
	label string
}

// panel is one small chart against the number of nodes.
type panel struct {
	id, title, unit string
	// floor is the lowest y drawn unless a value is lower.
	floor  float64
	series []series
	goals  []goal
	// digits is how many decimals the values show.
	digits int
}

// panels are the figures and goals (issue 16).
func panels() []panel {
	return []panel{
		{
			id: "makespan", title: "Makespan / ideal", unit: "ratio", floor: 1, digits: 3,
			series: []series{
				{name: "makespan / ideal", color: "#1f77b4", value: func(r result) float64 { return r.MakespanOverIdeal }, atLeast: true},
				{name: "ideal with drains", color: "#ff7f0e", value: func(r result) float64 { return r.MakespanOverIdealWithDrains }, finishedOnly: true},
			},
			goals: []goal{{500, 1.03, "≤ 1.03 at 500"}, {2000, 1.10, "≤ 1.10 at 2000"}},
		},
		{
			id: "slot", title: "Slot freed → next node, p99", unit: "s", digits: 2,
			series: []series{
				{name: "approval (drain in)", color: "#1f77b4", value: func(r result) float64 { return r.SlotToApprovalP99Ms / 1000 }},
				{name: "admission", color: "#ff7f0e", value: func(r result) float64 { return r.SlotToAdmissionP99Ms / 1000 }},
			},
			goals: []goal{{0, 1, "< 1 s at every size"}},
		},
		{
			id: "rss", title: "Operator peak RSS", unit: "MiB", digits: 0,
			series: []series{{name: "peak RSS", color: "#1f77b4", value: func(r result) float64 { return r.OperatorPeakRSSMiB }}},
			goals:  []goal{{2000, 150, "< 150 MiB at 2000"}, {5000, 250, "< 250 MiB at 5000"}},
		},
		{
			id: "requests", title: "API requests", unit: "per reboot", digits: 1,
			series: []series{
				{name: "operator", color: "#1f77b4", value: func(r result) float64 { return r.OperatorRequests }, finishedOnly: true},
				{name: "daemon", color: "#2ca02c", value: func(r result) float64 { return r.DaemonRequests }, finishedOnly: true},
				{name: "sum", color: "#000000", value: func(r result) float64 { return r.OperatorRequests + r.DaemonRequests }, finishedOnly: true},
			},
			goals: []goal{{0, 15, "sum ≤ 15"}},
		},
		{
			id: "event", title: "One event, the operator's time, p50", unit: "ms", digits: 1,
			series: []series{
				{name: "gate", color: "#1f77b4", value: func(r result) float64 { return r.GateEventP50Ms }},
				{name: "gate mean", color: "#9467bd", value: func(r result) float64 { return r.GateEventMeanMs }},
				{name: "aftercare", color: "#ff7f0e", value: func(r result) float64 { return r.AftercareEventP50Ms }},
				{name: "maintenance", color: "#2ca02c", value: func(r result) float64 { return r.MaintenanceEventP50Ms }},
			},
			goals: []goal{{5000, 20, "gate < 20 at 5000"}, {20000, 50, "gate < 50 at 20000"}},
		},
	}
}

// xMax is the most nodes the panel shows: of its results and goals. The
// per-event figures reach 20000 nodes, the rolling ones 5000; on one axis
// the rolling ones would crowd its first quarter.
func (p panel) xMax(results []result) float64 {
	xMax := 0.0
	for _, s := range p.series {
		for _, r := range s.measured(results) {
			xMax = math.Max(xMax, float64(r.Nodes))
		}
	}
	for _, g := range p.goals {
		xMax = math.Max(xMax, float64(g.nodes))
	}
	return xMax
}

// The picture's geometry, in pixels: a 2×2 grid of panels, and inside each
// the plotting area's margins.
const (
	panelW, panelH      = 440, 300
	marginTop           = 50
	plotLeft, plotRight = 64, 20
	plotTop, plotBottom = 36, 46
	goalColor           = "#d62728"
	footerLine          = 16
)

// draw draws results, fewest nodes first, as an SVG document.
func draw(results []result) string {
	ps := panels()
	rows := (len(ps) + 1) / 2
	width := 2 * panelW
	// Under the panels: a heading, then two lines per result, what it is
	// and the command that made it (a run of several sizes names them all,
	// too long to share a line).
	height := marginTop + rows*panelH + 20 + footerLine*(2*len(results)+1)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	text(&b, 16, 28, "start", 16, "bold", "kmaint rolling reboot: cost against the number of nodes (one request per node, all at once)")
	for i, p := range ps {
		drawPanel(&b, p, results, float64((i%2)*panelW), float64(marginTop+(i/2)*panelH), ticks(0, p.xMax(results)*1.05, 5))
	}
	y := marginTop + rows*panelH + 20
	text(&b, 16, float64(y), "start", 12, "bold", "Dashed red: goals of issues 16 and 44 (r = 10 s). Lines join results of one r;"+
		" hollow: unfinished; ringed: dirty tree.")
	for i, r := range results {
		var marks []string
		if r.Unfinished {
			marks = append(marks, fmt.Sprintf("unfinished: %d of %d rebooted", r.Rebooted, r.Nodes))
		}
		if r.dirty() {
			marks = append(marks, "from a dirty tree")
		}
		mark := ""
		if len(marks) > 0 {
			mark = " (" + strings.Join(marks, "; ") + ")"
		}
		// The picture names a commit by the first 12 digits, as git log
		// --abbrev=12 would; the JSON keeps the whole hash.
		line := fmt.Sprintf("%d nodes, k=%d, r=%gs%s: commit %s, %s", r.Nodes, r.MaxUnavailable, r.RebootSeconds, mark,
			abbrev(orUnknown(r.Commit)), orUnknown(r.Date))
		if r.Event {
			line = fmt.Sprintf("%d nodes, one event per controller, no API server (patches and handlers counted)%s: commit %s, %s", r.Nodes,
				mark, abbrev(orUnknown(r.Commit)), orUnknown(r.Date))
		}
		text(&b, 16, float64(y+footerLine*(2*i+1)), "start", 11, "normal", line)
		text(&b, 32, float64(y+footerLine*(2*i+2)), "start", 11, "normal", orUnknown(r.Command))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// abbrev shortens a commit hash to 12 digits, keeping a "-dirty" suffix.
func abbrev(commit string) string {
	hash, dirty, _ := strings.Cut(commit, "-")
	if len(hash) > 12 {
		hash = hash[:12]
	}
	if dirty != "" {
		return hash + "-" + dirty
	}
	return hash
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// drawPanel draws one panel with its top left corner at (x0, y0).
func drawPanel(b *strings.Builder, p panel, results []result, x0, y0 float64, xTicks []float64) {
	left, right := x0+plotLeft, x0+panelW-plotRight
	top, bottom := y0+plotTop, y0+panelH-plotBottom
	yLo, yHi := p.floor, p.floor
	for _, s := range p.series {
		for _, r := range s.measured(results) {
			v := s.value(r)
			yLo, yHi = math.Min(yLo, v), math.Max(yHi, v)
		}
	}
	for _, g := range p.goals {
		yHi = math.Max(yHi, g.y)
	}
	yTicks := ticks(yLo, yHi+(yHi-yLo)*0.15, 5)
	yLo, yHi = yTicks[0], yTicks[len(yTicks)-1]
	xHi := xTicks[len(xTicks)-1]
	px := func(n float64) float64 { return left + (right-left)*n/xHi }
	py := func(v float64) float64 { return bottom - (bottom-top)*(v-yLo)/(yHi-yLo) }

	fmt.Fprintf(b, `<g class="panel" id="%s">`+"\n", p.id)
	text(b, left, y0+22, "start", 13, "bold", p.title+" ("+p.unit+")")
	for _, t := range yTicks {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, py(t), right, py(t))
		text(b, left-6, py(t)+4, "end", 11, "normal", formatTick(t))
	}
	for _, t := range xTicks {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`+"\n", px(t), bottom, px(t), bottom+4)
		text(b, px(t), bottom+16, "middle", 11, "normal", formatTick(t))
	}
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#666"/>`+"\n", left, top, right-left, bottom-top)
	text(b, right, bottom+34, "end", 11, "normal", "nodes")
	text(b, x0+14, (top+bottom)/2, "middle", 11, "normal", p.unit, fmt.Sprintf(`transform="rotate(-90 %.1f %.1f)"`, x0+14, (top+bottom)/2))

	// Labels keep off the points and off each other.
	var labels []box
	for _, s := range p.series {
		for _, r := range s.measured(results) {
			x, y := px(float64(r.Nodes)), py(s.value(r))
			labels = append(labels, box{x1: x - 4, x2: x + 4, y: y + 4, size: 8})
		}
	}
	for _, g := range p.goals {
		gx1, gx2 := left, right
		if g.nodes > 0 {
			half := (right - left) * 0.07
			gx1, gx2 = math.Max(left, px(float64(g.nodes))-half), math.Min(right, px(float64(g.nodes))+half)
		}
		fmt.Fprintf(b, `<line class="goal" data-nodes="%d" data-y="%g" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="6 4"/>`+"\n",
			g.nodes, g.y, gx1, py(g.y), gx2, py(g.y), goalColor)
		anchor, lx := "end", gx2
		if g.nodes > 0 {
			anchor, lx = "middle", (gx1+gx2)/2
		}
		// Goals close in both axes (1.03 at 500 nodes, 1.10 at 2000) would
		// write their labels over each other, and a point may sit on one: a
		// label goes up a line until it clears them.
		label := "goal " + g.label
		at := labelBox(lx, py(g.y)-5, anchor, goalLabelSize, label)
		for slices.ContainsFunc(labels, at.overlaps) {
			at.y -= goalLabelSize + 2
		}
		labels = append(labels, at)
		text(b, lx, at.y, anchor, goalLabelSize, "normal", label, `fill="`+goalColor+`"`, `class="goal-label"`)
	}
	for si, s := range p.series {
		// A line joins only results of one reboot time r: a smaller r
		// packs more waves into the same time and is another curve.
		byR := map[float64][]string{}
		var rs []float64
		for _, r := range s.measured(results) {
			if _, ok := byR[r.RebootSeconds]; !ok {
				rs = append(rs, r.RebootSeconds)
			}
			byR[r.RebootSeconds] = append(byR[r.RebootSeconds], fmt.Sprintf("%.1f,%.1f", px(float64(r.Nodes)), py(s.value(r))))
		}
		for _, r := range rs {
			fmt.Fprintf(b, `<polyline data-reboot-seconds="%g" points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", r, strings.Join(byR[r], " "), s.color)
		}
		for _, r := range s.measured(results) {
			v := s.value(r)
			fill, label := s.color, fmt.Sprintf("%.*f", p.digits, v)
			if r.Unfinished {
				fill = "white"
				if s.atLeast {
					label = "≥ " + label
				}
			}
			fmt.Fprintf(b, `<circle class="point" data-series="%s" data-nodes="%d" data-unfinished="%t" data-dirty="%t" cx="%.1f" cy="%.1f" r="3.5" fill="%s" stroke="%s" stroke-width="1.5"/>`+"\n",
				s.name, r.Nodes, r.Unfinished, r.dirty(), px(float64(r.Nodes)), py(v), fill, s.color)
			if r.dirty() {
				fmt.Fprintf(b, `<circle class="dirty" cx="%.1f" cy="%.1f" r="7" fill="none" stroke="%s" stroke-width="1" stroke-dasharray="2 2"/>`+"\n",
					px(float64(r.Nodes)), py(v), s.color)
			}
			at := pointLabel(labels, px(float64(r.Nodes)), py(v), label)
			labels = append(labels, at)
			text(b, at.x1, at.y, "start", pointLabelSize, "normal", label, `fill="`+s.color+`"`, `class="point-label"`)
		}
		if len(p.series) > 1 {
			// The legend goes under the axis, beside its label, where
			// no point can hide it.
			lx := left
			for _, before := range p.series[:si] {
				lx += float64(len([]rune(before.name)))*6 + 34
			}
			ly := bottom + 34
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", lx, ly-4, lx+16, ly-4, s.color)
			text(b, lx+20, ly, "start", 11, "normal", s.name)
		}
	}
	b.WriteString("</g>\n")
}

// text writes a text element, its content escaped.
func text(b *strings.Builder, x, y float64, anchor string, size int, weight, content string, extra ...string) {
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s" font-size="%d" font-weight="%s" %s>`, x, y, anchor, size, weight, strings.Join(extra, " "))
	_ = xml.EscapeText(b, []byte(content))
	b.WriteString("</text>\n")
}

// goalLabelSize and pointLabelSize are the font sizes of a goal's label
// and a point's value.
const (
	goalLabelSize  = 10
	pointLabelSize = 10
)

// pointLabel places the value of the point at x, y: above and to its
// right, else below and to its right, else up from there a line at a time,
// until it clears the labels placed. Points close together (the two series
// of a panel at 500 nodes) and goals near a point would otherwise write
// over each other.
func pointLabel(placed []box, x, y float64, label string) box {
	above := labelBox(x+6, y-6, "start", pointLabelSize, label)
	if !slices.ContainsFunc(placed, above.overlaps) {
		return above
	}
	below := labelBox(x+6, y+6+pointLabelSize, "start", pointLabelSize, label)
	if !slices.ContainsFunc(placed, below.overlaps) {
		return below
	}
	for slices.ContainsFunc(placed, above.overlaps) {
		above.y -= pointLabelSize + 2
	}
	return above
}

// box is the room a line of text takes: x from x1 to x2, its baseline at
// y, size high.
type box struct {
	x1, x2, y, size float64
}

// labelBox is where text of the given size, anchored at x ("start",
// "middle" or "end") on the baseline y, lies. A sans-serif character is
// taken as 0.6 of the font size wide, a little more than most are.
func labelBox(x, y float64, anchor string, size int, content string) box {
	w := 0.6 * float64(size) * float64(len([]rune(content)))
	x1 := x
	switch anchor {
	case "middle":
		x1 = x - w/2
	case "end":
		x1 = x - w
	}
	return box{x1: x1, x2: x1 + w, y: y, size: float64(size)}
}

func (a box) overlaps(b box) bool {
	return a.x1 < b.x2 && b.x1 < a.x2 && a.y-a.size < b.y && b.y-b.size < a.y
}

// ticks are about n round values from lo or below to hi or above.
func ticks(lo, hi float64, n int) []float64 {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for t := math.Floor(lo/step) * step; ; t += step {
		out = append(out, t)
		if t >= hi-step*1e-9 {
			return out
		}
	}
}

// formatTick writes a tick's value without needless decimals.
func formatTick(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}
