package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRunDrawsOnePointPerResultAndEveryGoal writes made-up results, runs
// the command's work and reads the SVG back as XML: every panel has one
// point per result and series, a line per series and reboot time, every
// goal has its line, and every
// result's commit is written under the panels.
func TestRunDrawsOnePointPerResultAndEveryGoal(t *testing.T) {
	const longCommand = "make bench BENCH=500:25:10s,2000:100:10s,5000:250:10s"
	dir := t.TempDir()
	made := []result{
		{Nodes: 2000, MaxUnavailable: 100, RebootSeconds: 10, MakespanOverIdeal: 3.6, SlotToApprovalP99Ms: 2050, SlotToAdmissionP99Ms: 800, MakespanOverIdealWithDrains: 1.08, OperatorPeakRSSMiB: 162, OperatorRequests: 19.9, DaemonRequests: 6.8, Commit: "bbbb", Date: "2026-12-01T10:00:00Z", Command: "make bench"},
		{Nodes: 500, MaxUnavailable: 25, RebootSeconds: 10, MakespanOverIdeal: 1.06, SlotToApprovalP99Ms: 300, SlotToAdmissionP99Ms: 200, MakespanOverIdealWithDrains: 1.02, OperatorPeakRSSMiB: 98, OperatorRequests: 22.7, DaemonRequests: 6.8, Commit: "aaaa-dirty", Date: "2026-12-01T09:00:00Z", Command: "make bench"},
		{Nodes: 100, MaxUnavailable: 10, RebootSeconds: 2, MakespanOverIdeal: 1.5, SlotToApprovalP99Ms: 700, OperatorPeakRSSMiB: 85, OperatorRequests: 25.6, DaemonRequests: 6.6, Commit: "dddd", Date: "2026-12-01T12:00:00Z", Command: "make bench BENCH=100:10:2s"},
		{Nodes: 5000, MaxUnavailable: 250, RebootSeconds: 10, Unfinished: true, Rebooted: 3100, Dirty: true, MakespanOverIdeal: 1.4, SlotToApprovalP99Ms: 4000, SlotToAdmissionP99Ms: 900, MakespanOverIdealWithDrains: 1.2, OperatorPeakRSSMiB: 300, OperatorRequests: 18, DaemonRequests: 6.8, Commit: "cccc", Date: "2026-12-01T11:00:00Z", Command: longCommand},
	}
	for _, r := range made {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "rolling-"+strconv.Itoa(r.Nodes)+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The per-event figures of two controllers (make bench-controllers).
	for controller, p50s := range map[string][]float64{"gate": {3.4, 28.8, 164}, "aftercare": {1.1, 17.8, 112.7}} {
		e := map[string]any{"controller": controller, "command": "make bench-controllers", "commit": "eeee", "date": "2026-12-05T12:00:00Z"}
		var pts []map[string]any
		for i, n := range []int{500, 5000, 20000} {
			pt := map[string]any{"nodes": n, "eventP50Ms": p50s[i]}
			if controller == "gate" {
				pt["eventMeanMs"] = p50s[i] * 1.5
			}
			pts = append(pts, pt)
		}
		e["points"] = pts
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "event-"+controller+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := run(dir); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "scaling.svg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	points := map[string]map[string]int{} // panel → series → points
	hollow := map[string]int{}            // panel → points of unfinished results
	dirty := map[string]int{}             // panel → points of results from a dirty tree
	rings := map[string]int{}             // panel → dashed rings
	goals := map[string][]string{}        // panel → nodes@y
	lines := map[string]int{}             // panel → polylines
	var texts []string
	type placed struct {
		panel, content string
		attrs          map[string]string
	}
	var goalLabels, allLabels []placed
	var label *placed
	panel := ""
	dec := xml.NewDecoder(f)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("scaling.svg is not XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			attrs := map[string]string{}
			for _, a := range el.Attr {
				attrs[a.Name.Local] = a.Value
			}
			switch {
			case el.Name.Local == "g" && attrs["class"] == "panel":
				panel = attrs["id"]
			case attrs["class"] == "point":
				if points[panel] == nil {
					points[panel] = map[string]int{}
				}
				points[panel][attrs["data-series"]]++
				if attrs["data-dirty"] == "true" {
					dirty[panel]++
				}
				if attrs["data-unfinished"] == "true" {
					if attrs["fill"] != "white" {
						t.Errorf("panel %s: a point of an unfinished result is filled %q, want hollow", panel, attrs["fill"])
					}
					hollow[panel]++
				}
			case attrs["class"] == "dirty":
				rings[panel]++
			case el.Name.Local == "polyline":
				lines[panel]++
			case attrs["class"] == "goal":
				goals[panel] = append(goals[panel], attrs["data-nodes"]+"@"+attrs["data-y"])
			case attrs["class"] == "goal-label" || attrs["class"] == "point-label":
				label = &placed{panel: panel, attrs: attrs}
			}
		case xml.CharData:
			texts = append(texts, string(el))
			if label != nil {
				label.content = string(el)
				if label.attrs["class"] == "goal-label" {
					goalLabels = append(goalLabels, *label)
				}
				allLabels = append(allLabels, *label)
				label = nil
			}
		}
	}

	wantSeries := map[string][]string{
		"makespan": {"makespan / ideal", "ideal with drains"},
		"slot":     {"approval (drain in)", "admission"},
		"rss":      {"peak RSS"},
		"requests": {"operator", "daemon", "sum"},
	}
	// The 100-node result was made before the bench measured slot to
	// admission and drains: those series have no point for it, and no
	// line for its reboot time (2 s), rather than a point at zero.
	older := map[string]bool{"admission": true, "ideal with drains": true}
	// The 5000-node result did not finish: what it says per reboot, and
	// its ideal with drains, mean nothing and are not drawn.
	finishedOnly := map[string]bool{"ideal with drains": true, "operator": true, "daemon": true, "sum": true}
	for p, series := range wantSeries {
		if len(points[p]) != len(series) {
			t.Errorf("panel %s: series %v, want %v", p, points[p], series)
		}
		for _, s := range series {
			want := len(made)
			if older[s] {
				want--
			}
			if finishedOnly[s] {
				want--
			}
			if points[p][s] != want {
				t.Errorf("panel %s, series %s: %d points, want one per result that has it (%d)", p, s, points[p][s], want)
			}
		}
	}
	for p, series := range wantSeries {
		want := 0
		for _, s := range series {
			want += 2 // reboot times 2 s and 10 s
			if older[s] {
				want--
			}
		}
		if lines[p] != want {
			t.Errorf("panel %s: %d lines, want %d: one per series and reboot time it has results of", p, lines[p], want)
		}
	}
	wantGoals := map[string]string{
		"makespan": "500@1.03 2000@1.1",
		"slot":     "0@1",
		"rss":      "2000@150 5000@250",
		"requests": "0@15",
		"event":    "5000@20 20000@50",
	}
	for p, want := range wantGoals {
		if got := strings.Join(goals[p], " "); got != want {
			t.Errorf("panel %s: goal lines %q, want %q", p, got, want)
		}
	}
	// The 5000-node result is drawn hollow where drawn, its makespan
	// labelled as the lower bound it is, and the line under the panels
	// says how far it got.
	for p, series := range wantSeries {
		want := 0
		for _, s := range series {
			if !finishedOnly[s] {
				want++
			}
		}
		if hollow[p] != want {
			t.Errorf("panel %s: %d hollow points, want %d for the unfinished result", p, hollow[p], want)
		}
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"≥ 1.400", "(unfinished: 3100 of 5000 rebooted; from a dirty tree)", "k=25, r=10s (from a dirty tree)"} {
		if !strings.Contains(all, want) {
			t.Errorf("the picture does not say %q", want)
		}
	}
	// No label writes over another: the makespan panel's two goals are
	// close in both axes, and the two series of a panel close at 500 nodes
	// (1.06 and 1.02 here), beside a goal.
	boxOf := func(l placed) box {
		x, _ := strconv.ParseFloat(l.attrs["x"], 64)
		y, _ := strconv.ParseFloat(l.attrs["y"], 64)
		size, _ := strconv.Atoi(l.attrs["font-size"])
		return labelBox(x, y, l.attrs["text-anchor"], size, l.content)
	}
	if len(goalLabels) != 8 {
		t.Errorf("%d goal labels, want one per goal (8)", len(goalLabels))
	}
	// The 500-node result came from a dirty tree (its commit says so), and
	// the 5000-node one (it says so): each of their points is ringed, and
	// no other.
	for p := range wantSeries {
		if dirty[p] == 0 || rings[p] != dirty[p] {
			t.Errorf("panel %s: %d points of a dirty tree, %d rings, want one ring each", p, dirty[p], rings[p])
		}
	}
	// One point per size of each controller measured, none of one not.
	if got := points["event"]; got["gate"] != 3 || got["gate mean"] != 3 || got["aftercare"] != 3 || got["maintenance"] != 0 {
		t.Errorf("panel event: points %v, want 3 of the gate's p50 and mean, 3 of aftercare, none of maintenance", got)
	}
	if !slices.Contains(texts, "20000 nodes, one event per controller, no API server (patches and handlers counted): commit eeee, 2026-12-05T12:00:00Z") {
		t.Error("no line under the panels names the per-event figures' commit")
	}
	for i, a := range allLabels {
		for _, b := range allLabels[i+1:] {
			if a.panel == b.panel && boxOf(a).overlaps(boxOf(b)) {
				t.Errorf("panel %s: labels %q and %q overlap", a.panel, a.content, b.content)
			}
		}
	}
	// Every line fits the picture's width (880 px; 11 px sans-serif runs
	// about 6 px a character), the longest command on a line of its own.
	for _, line := range texts {
		if n := len([]rune(line)); n > 130 {
			t.Errorf("a line of %d characters runs past the picture's edge: %q", n, line)
		}
	}
	if !slices.Contains(texts, longCommand) {
		t.Errorf("the command %q is not on a line of its own", longCommand)
	}
	for _, commit := range []string{"aaaa-dirty", "bbbb", "cccc", "dddd"} {
		if !strings.Contains(all, "commit "+commit) {
			t.Errorf("no line under the panels names commit %s", commit)
		}
	}
}
