package main

import (
	"strings"
	"testing"
)

// TestDrawShowsTheRebootsTheFaultsAndTheMemory: every kind in the timeline
// has its row, the reboots their line, each sample its point.
func TestDrawShowsTheRebootsTheFaultsAndTheMemory(t *testing.T) {
	r := result{Seed: 7, DurationSeconds: 60, EndSeconds: 10, RebootsByDaemon: 2, OperatorFlat: "flat enough",
		Checked: map[string]int{"budget": 2, "end": 5},
		Excused: map[string]struct {
			Count   int     `json:"count"`
			Seconds float64 `json:"seconds"`
		}{"blind-nodes": {1, 4.2}},
		Timeline: []moment{{1, "host-request"}, {2, "reboot"}, {3, "operator-killed"}, {5, "reboot"}},
		Operator: []replicaSample{{0, 10, 60}, {1, 20, 70}}}
	svg := draw(r)
	for _, want := range []string{"seed 7", ">host-request (1)<", ">operator-killed (1)<", "budget 2, end 5", "excused: blind-nodes 1 (4s)", "<polyline", "flat enough"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the picture lacks %q", want)
		}
	}
	if got := strings.Count(svg, "<circle"); got != 2 {
		t.Errorf("%d memory points, want 2", got)
	}
	if strings.Contains(svg, ">reboot<") {
		t.Error("reboots have a row of their own besides their line")
	}
}
