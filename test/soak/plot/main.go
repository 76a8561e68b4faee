// Command plot draws each soak result (test/soak/results/soak-*.json) into
// an SVG beside it: the reboots as they added up, when each kind of request
// and fault landed, and the operator replicas' memory over the run, under a
// line with the seed, the checks and the commit. make soak runs it after the
// soak; `go run ./test/soak/plot` redraws by hand. It writes the SVG by
// hand: no dependencies.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kmaint/kmaint/test/repo"
)

// result is the part of a soak result the picture draws.
type result struct {
	Seed            uint64         `json:"seed"`
	DurationSeconds float64        `json:"durationSeconds"`
	EndSeconds      float64        `json:"endSeconds"`
	RebootsByDaemon int            `json:"rebootsByDaemon"`
	Violations      []struct{}     `json:"violations"`
	Checked         map[string]int `json:"checked"`
	Excused         map[string]struct {
		Count   int     `json:"count"`
		Seconds float64 `json:"seconds"`
	} `json:"excused"`
	// Checker names the checker that made a result older than the one
	// that reports what it excused.
	Checker      string          `json:"checker"`
	OperatorFlat string          `json:"operatorFlat"`
	Commit       string          `json:"commit"`
	Command      string          `json:"command"`
	Timeline     []moment        `json:"timeline"`
	Operator     []replicaSample `json:"operator"`
}

type moment struct {
	Seconds float64 `json:"seconds"`
	Kind    string  `json:"kind"`
}

type replicaSample struct {
	Replica int     `json:"replica"`
	Seconds float64 `json:"seconds"`
	RSSMiB  float64 `json:"rssMiB"`
}

func main() {
	dflt := filepath.Join(repo.Root(), "test", "soak", "results")
	dir := flag.String("results", dflt, "Directory of the soak-*.json results; each SVG goes beside its JSON.")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	paths, err := filepath.Glob(filepath.Join(dir, "soak-*.json"))
	if err != nil {
		return err
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var r result
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		out := strings.TrimSuffix(p, ".json") + ".svg"
		if err := os.WriteFile(out, []byte(draw(r)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

const (
	width  = 960.0
	left   = 170.0
	right  = 20.0
	plotW  = width - left - right
	rowH   = 14.0
	panelH = 140.0
)

// draw renders one result.
func draw(r result) string {
	end := r.DurationSeconds + r.EndSeconds
	for _, m := range r.Timeline {
		end = max(end, m.Seconds)
	}
	if end <= 0 {
		end = 1
	}
	x := func(sec float64) float64 { return left + plotW*sec/end }
	var kinds []string
	for _, m := range r.Timeline {
		if m.Kind != "reboot" && !slices.Contains(kinds, m.Kind) {
			kinds = append(kinds, m.Kind)
		}
	}
	slices.Sort(kinds)
	var b strings.Builder
	y := 20.0
	text := func(x, y float64, anchor, s string) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="%s">%s</text>`+"\n", x, y, anchor, html.EscapeString(s))
	}
	height := 74 + panelH + 30 + float64(len(kinds))*rowH + 30 + panelH + 60
	if len(r.Excused) > 0 {
		height += 14
	}
	if r.Checker != "" {
		height += 14
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	text(left, y, "start", fmt.Sprintf("soak, seed %d: %d reboots by daemons in %.0fs of faults, then %.0fs to end every request; %d violations",
		r.Seed, r.RebootsByDaemon, r.DurationSeconds, r.EndSeconds, len(r.Violations)))
	if len(r.Checked) > 0 {
		var held []string
		for _, inv := range slices.Sorted(maps.Keys(r.Checked)) {
			held = append(held, fmt.Sprintf("%s %d", inv, r.Checked[inv]))
		}
		y += 14
		text(left, y, "start", "invariants held to: "+strings.Join(held, ", "))
	}
	if len(r.Excused) > 0 {
		var let []string
		for _, why := range slices.Sorted(maps.Keys(r.Excused)) {
			let = append(let, fmt.Sprintf("%s %d (%.0fs)", why, r.Excused[why].Count, r.Excused[why].Seconds))
		}
		y += 14
		text(left, y, "start", "excused: "+strings.Join(let, ", "))
	}
	if r.Checker != "" {
		y += 14
		text(left, y, "start", "checker: "+r.Checker)
	}
	y += 20

	// Reboots as they added up.
	top := y
	text(left-8, top+10, "end", "reboots (cumulative)")
	var pts []string
	n := 0
	for _, m := range r.Timeline {
		if m.Kind == "reboot" {
			n++
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(m.Seconds), top+panelH-panelH*float64(n)/float64(max(r.RebootsByDaemon, 1))))
		}
	}
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#ccc"/>`+"\n", left, top, plotW, panelH)
	fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#1f77b4" stroke-width="1.5"/>`+"\n", strings.Join(pts, " "))
	text(left-8, top+panelH, "end", "0")
	text(left-8, top+12, "end", fmt.Sprint(r.RebootsByDaemon))
	// The faults' end.
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#d62728" stroke-dasharray="4 3"/>`+"\n",
		x(r.DurationSeconds), top, x(r.DurationSeconds), top+panelH+30+float64(len(kinds))*rowH)
	y = top + panelH + 30

	// When each kind landed.
	for i, k := range kinds {
		ry := y + float64(i)*rowH
		n := 0
		for _, m := range r.Timeline {
			if m.Kind == k {
				n++
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#555"/>`+"\n", x(m.Seconds), ry+2, x(m.Seconds), ry+rowH-2)
			}
		}
		text(left-8, ry+10, "end", fmt.Sprintf("%s (%d)", k, n))
	}
	y += float64(len(kinds))*rowH + 30

	// The replicas' memory.
	top = y
	most := 1.0
	for _, s := range r.Operator {
		most = max(most, s.RSSMiB)
	}
	text(left-8, top+10, "end", "operator RSS (MiB)")
	text(left-8, top+24, "end", fmt.Sprintf("%.0f", most))
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#ccc"/>`+"\n", left, top, plotW, panelH)
	colors := []string{"#2ca02c", "#9467bd", "#ff7f0e"}
	for _, s := range r.Operator {
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2" fill="%s"/>`+"\n", x(s.Seconds), top+panelH-panelH*s.RSSMiB/most, colors[s.Replica%len(colors)])
	}
	y = top + panelH + 18
	text(left, y, "start", "seconds from the start: 0 to "+fmt.Sprintf("%.0f", end)+"; dashed: the faults stop. Replicas by color. "+r.OperatorFlat)
	y += 16
	text(left, y, "start", r.Command+" at "+r.Commit)
	b.WriteString("</svg>\n")
	return b.String()
}
