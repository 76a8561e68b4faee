package report

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

func seg(k Kind, from, to int) Segment {
	return Segment{Kind: k, Interval: Interval{Start: at(from), End: at(to)}}
}

func hookSeg(k Kind, from, to int, hooks ...string) Segment {
	s := seg(k, from, to)
	s.Hooks = hooks
	return s
}

// hookTime is a point's stretch at hooks, in seconds after t0; passed -1
// for one not passed.
func hookTime(point string, started, passed int, hooks ...string) v1alpha1.HookTime {
	h := v1alpha1.HookTime{Point: point, Hooks: hooks, Started: metav1.NewTime(at(started))}
	if passed >= 0 {
		p := metav1.NewTime(at(passed))
		h.Passed = &p
	}
	return h
}

func hooked(m v1alpha1.NodeMaintenance, times ...v1alpha1.HookTime) v1alpha1.NodeMaintenance {
	m.Status.HookTimes = times
	return m
}

func TestTimelineOf(t *testing.T) {
	type P = map[v1alpha1.Phase]int
	now := at(1000)
	noTimes := nm("fresh", "n", v1alpha1.SourceAPI, "", nil)
	noTimes.CreationTimestamp = metav1.NewTime(at(900))

	tests := map[string]struct {
		nm v1alpha1.NodeMaintenance
		// segments are the stretches, in order.
		segments []Segment
		// back and failed are the end markers, in seconds; -1 for none.
		back, failed int
		// reason is the failure's reason.
		reason string
		// unavailable is the span the node counted against its budget;
		// nil when it never did.
		unavailable *[2]int
	}{
		"the whole way": {
			nm:       nm("m", "n", v1alpha1.SourceAPI, v1alpha1.PhaseSucceeded, whole(0, 10)),
			segments: []Segment{seg(KindDaemon, 0, 10), seg(KindGate, 10, 20), seg(KindDraining, 20, 30), seg(KindRebooting, 30, 40)},
			back:     40, failed: -1,
			unavailable: &[2]int{20, 40},
		},
		"settling after the reboot, then back": {
			nm:       nm("m", "n", v1alpha1.SourceConfig, v1alpha1.PhaseSucceeded, P{v1alpha1.PhaseRequested: 5, v1alpha1.PhaseDraining: 7, v1alpha1.PhaseApproved: 9, v1alpha1.PhaseRebooting: 9, v1alpha1.PhaseSettling: 20, v1alpha1.PhaseSucceeded: 80}),
			segments: []Segment{seg(KindGate, 5, 7), seg(KindDraining, 7, 9), seg(KindRebooting, 9, 20), seg(KindSettling, 20, 80)},
			back:     80, failed: -1,
			unavailable: &[2]int{7, 80},
		},
		"settling still: the node keeps its slot until now": {
			nm:       nm("m", "n", v1alpha1.SourceConfig, v1alpha1.PhaseSettling, P{v1alpha1.PhaseRequested: 5, v1alpha1.PhaseDraining: 7, v1alpha1.PhaseRebooting: 9, v1alpha1.PhaseSettling: 20}),
			segments: []Segment{seg(KindGate, 5, 7), seg(KindDraining, 7, 9), seg(KindRebooting, 9, 20), {Kind: KindSettling, Interval: Interval{Start: at(20), End: now}, Open: true}},
			back:     -1, failed: -1,
			unavailable: &[2]int{7, 1000},
		},
		"a host request starts at Requested": {
			nm:       nm("m", "n", v1alpha1.SourceHost, v1alpha1.PhaseSucceeded, P{v1alpha1.PhaseRequested: 5, v1alpha1.PhaseApproved: 7, v1alpha1.PhaseDraining: 7, v1alpha1.PhaseRebooting: 9, v1alpha1.PhaseSucceeded: 30}),
			segments: []Segment{seg(KindGate, 5, 7), seg(KindDraining, 7, 9), seg(KindRebooting, 9, 30)},
			back:     30, failed: -1,
			unavailable: &[2]int{7, 30},
		},
		"approved after the drain: the reboot's stretch starts at Approved": {
			nm:       nm("m", "n", v1alpha1.SourceHost, v1alpha1.PhaseSucceeded, P{v1alpha1.PhaseRequested: 5, v1alpha1.PhaseDraining: 7, v1alpha1.PhaseApproved: 12, v1alpha1.PhaseRebooting: 13, v1alpha1.PhaseSucceeded: 30}),
			segments: []Segment{seg(KindGate, 5, 7), seg(KindDraining, 7, 12), seg(KindRebooting, 12, 30)},
			back:     30, failed: -1,
			unavailable: &[2]int{7, 30},
		},
		"a daemon that never acts: Approved runs on": {
			nm:       nm("m", "n", v1alpha1.SourceHost, v1alpha1.PhaseApproved, P{v1alpha1.PhaseRequested: 5, v1alpha1.PhaseDraining: 7, v1alpha1.PhaseApproved: 12}),
			segments: []Segment{seg(KindGate, 5, 7), seg(KindDraining, 7, 12), {Kind: KindRebooting, Interval: Interval{Start: at(12), End: now}, Open: true}},
			back:     -1, failed: -1,
			unavailable: &[2]int{7, 1000},
		},
		"admitted at once: Approved and Draining at the time of Requested": {
			nm:       nm("m", "n", v1alpha1.SourceHost, v1alpha1.PhaseSucceeded, P{v1alpha1.PhaseRequested: 5, v1alpha1.PhaseApproved: 5, v1alpha1.PhaseDraining: 5, v1alpha1.PhaseRebooting: 9, v1alpha1.PhaseSucceeded: 30}),
			segments: []Segment{seg(KindDraining, 5, 9), seg(KindRebooting, 9, 30)},
			back:     30, failed: -1,
			unavailable: &[2]int{5, 30},
		},
		"missing Approved and Draining: waiting runs on to Rebooting": {
			nm:       nm("m", "n", v1alpha1.SourceAPI, v1alpha1.PhaseSucceeded, P{v1alpha1.PhasePending: 0, v1alpha1.PhaseRequested: 5, v1alpha1.PhaseRebooting: 30, v1alpha1.PhaseSucceeded: 60}),
			segments: []Segment{seg(KindDaemon, 0, 5), seg(KindGate, 5, 30), seg(KindRebooting, 30, 60)},
			back:     60, failed: -1,
			unavailable: &[2]int{30, 60},
		},
		"a failed drain holds the node until it fails": {
			nm: failedWith(nm("m", "n", v1alpha1.SourceMetric, v1alpha1.PhaseFailed, P{v1alpha1.PhaseRequested: 0, v1alpha1.PhaseApproved: 10, v1alpha1.PhaseDraining: 10, v1alpha1.PhaseFailed: 610}),
				"DrainTimeout", "pods blocked"),
			segments: []Segment{seg(KindGate, 0, 10), seg(KindDraining, 10, 610)},
			back:     -1, failed: 610, reason: "DrainTimeout",
			unavailable: &[2]int{10, 610},
		},
		"refused at once: nothing but the failure": {
			nm:   failedWith(nm("m", "n", v1alpha1.SourceAPI, v1alpha1.PhaseFailed, P{v1alpha1.PhaseFailed: 3}), "Duplicate", "another is open"),
			back: -1, failed: 3, reason: "Duplicate",
		},
		"failed without a Succeeded condition": {
			nm:       nm("m", "n", v1alpha1.SourceAPI, v1alpha1.PhaseFailed, P{v1alpha1.PhasePending: 0, v1alpha1.PhaseFailed: 3}),
			segments: []Segment{seg(KindDaemon, 0, 3)},
			back:     -1, failed: 3, reason: "Failed",
		},
		"open: the last stretch runs to now": {
			nm:       nm("m", "n", v1alpha1.SourceAPI, v1alpha1.PhaseDraining, P{v1alpha1.PhaseRequested: 900, v1alpha1.PhaseApproved: 950, v1alpha1.PhaseDraining: 950}),
			segments: []Segment{seg(KindGate, 900, 950), {Kind: KindDraining, Interval: Interval{Start: at(950), End: now}, Open: true}},
			back:     -1, failed: -1,
			unavailable: &[2]int{950, 1000},
		},
		"Succeeded without its time ends where the last phase began": {
			nm:       nm("m", "n", v1alpha1.SourceAPI, v1alpha1.PhaseSucceeded, P{v1alpha1.PhaseRequested: 0, v1alpha1.PhaseDraining: 10, v1alpha1.PhaseRebooting: 20}),
			segments: []Segment{seg(KindGate, 0, 10), seg(KindDraining, 10, 20)},
			back:     20, failed: -1,
			unavailable: &[2]int{10, 20},
		},
		"times out of order are clamped": {
			nm:       nm("m", "n", v1alpha1.SourceAPI, v1alpha1.PhaseSucceeded, P{v1alpha1.PhaseRequested: 10, v1alpha1.PhaseDraining: 5, v1alpha1.PhaseRebooting: 20, v1alpha1.PhaseSucceeded: 15}),
			segments: []Segment{seg(KindDraining, 10, 20)},
			back:     20, failed: -1,
			unavailable: &[2]int{10, 20},
		},
		"hooks at every point: stretches within the drain and the return": {
			nm: hooked(nm("m", "n", v1alpha1.SourceConfig, v1alpha1.PhaseSucceeded, P{v1alpha1.PhaseRequested: 5, v1alpha1.PhaseDraining: 10, v1alpha1.PhaseApproved: 60, v1alpha1.PhaseRebooting: 61, v1alpha1.PhaseSucceeded: 150}),
				hookTime("beforeDrain", 10, 20, "db"), hookTime("beforeReboot", 30, 60, "stage"), hookTime("afterReboot", 100, 149, "check")),
			segments: []Segment{seg(KindGate, 5, 10), hookSeg(KindBeforeDrain, 10, 20, "db"), seg(KindDraining, 20, 30), hookSeg(KindBeforeReboot, 30, 60, "stage"),
				seg(KindRebooting, 60, 100), hookSeg(KindAfterReboot, 100, 150, "check")},
			back: 150, failed: -1,
			unavailable: &[2]int{10, 150},
		},
		"a hook that passes at once cuts nothing": {
			nm:       hooked(nm("m", "n", v1alpha1.SourceConfig, v1alpha1.PhaseSucceeded, P{v1alpha1.PhaseRequested: 5, v1alpha1.PhaseDraining: 10, v1alpha1.PhaseRebooting: 30, v1alpha1.PhaseSucceeded: 50}), hookTime("beforeDrain", 10, 10, "db")),
			segments: []Segment{seg(KindGate, 5, 10), seg(KindDraining, 10, 30), seg(KindRebooting, 30, 50)},
			back:     50, failed: -1,
			unavailable: &[2]int{10, 50},
		},
		"released by a failed hook before the reboot: the stretch runs to the failure": {
			nm: hooked(failedWith(nm("m", "n", v1alpha1.SourceConfig, v1alpha1.PhaseFailed, P{v1alpha1.PhaseRequested: 5, v1alpha1.PhaseDraining: 10, v1alpha1.PhaseFailed: 400}), "HookFailed", "stage failed"),
				hookTime("beforeReboot", 30, -1, "stage")),
			segments: []Segment{seg(KindGate, 5, 10), seg(KindDraining, 10, 30), hookSeg(KindBeforeReboot, 30, 400, "stage")},
			back:     -1, failed: 400, reason: "HookFailed",
			unavailable: &[2]int{10, 400},
		},
		"waiting at its hooks after the reboot now, then settling": {
			nm: hooked(nm("m", "n", v1alpha1.SourceConfig, v1alpha1.PhaseRebooting, P{v1alpha1.PhaseRequested: 5, v1alpha1.PhaseDraining: 10, v1alpha1.PhaseRebooting: 20}),
				hookTime("afterReboot", 900, -1, "check", "smoke")),
			segments: []Segment{seg(KindGate, 5, 10), seg(KindDraining, 10, 20), seg(KindRebooting, 20, 900), {Kind: KindAfterReboot, Interval: Interval{Start: at(900), End: now}, Open: true, Hooks: []string{"check", "smoke"}}},
			back:     -1, failed: -1,
			unavailable: &[2]int{10, 1000},
		},
		"nothing stamped yet: waits from its creation": {
			nm:       noTimes,
			segments: []Segment{{Kind: KindDaemon, Interval: Interval{Start: at(900), End: now}, Open: true}},
			back:     -1, failed: -1,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := timelineOf(&tt.nm, now)
			if diff := cmp.Diff(tt.segments, got.Segments); diff != "" {
				t.Errorf("segments (-want +got):\n%s", diff)
			}
			checkMark(t, "back", got.Back, tt.back)
			checkMark(t, "failed", got.Failed, tt.failed)
			if got.FailReason != tt.reason {
				t.Errorf("fail reason %q, want %q", got.FailReason, tt.reason)
			}
			iv, ok := got.Unavailable()
			switch {
			case tt.unavailable == nil && ok:
				t.Errorf("unavailable %v, want never", iv)
			case tt.unavailable != nil && (!ok || !iv.Start.Equal(at(tt.unavailable[0])) || !iv.End.Equal(at(tt.unavailable[1]))):
				t.Errorf("unavailable %v (%v), want %v", iv, ok, *tt.unavailable)
			}
		})
	}
}

func checkMark(t *testing.T, what string, got time.Time, want int) {
	t.Helper()
	if want < 0 {
		if !got.IsZero() {
			t.Errorf("%s at %v, want none", what, got)
		}
		return
	}
	if !got.Equal(at(want)) {
		t.Errorf("%s at %v, want %v", what, got, at(want))
	}
}

func TestUnavailableSteps(t *testing.T) {
	iv := func(from, to int) Interval { return Interval{Start: at(from), End: at(to)} }
	step := func(s, c int) Step { return Step{At: at(s), Count: c} }
	tests := map[string]struct {
		byNode map[string][]Interval
		// want is the count over time, ending at 0.
		want []Step
	}{
		"none": {},
		"one node": {
			byNode: map[string][]Interval{"a": {iv(10, 20)}},
			want:   []Step{step(10, 1), step(20, 0)},
		},
		"two nodes overlapping": {
			byNode: map[string][]Interval{"a": {iv(0, 10)}, "b": {iv(5, 15)}},
			want:   []Step{step(0, 1), step(5, 2), step(10, 1), step(15, 0)},
		},
		"a hand-over at one instant neither spikes nor dips": {
			byNode: map[string][]Interval{"a": {iv(0, 10)}, "b": {iv(10, 20)}},
			want:   []Step{step(0, 1), step(20, 0)},
		},
		"a node with two maintenances at once counts once": {
			byNode: map[string][]Interval{"a": {iv(0, 10), iv(5, 15)}},
			want:   []Step{step(0, 1), step(15, 0)},
		},
		"a node with two maintenances one after the other": {
			byNode: map[string][]Interval{"a": {iv(20, 30), iv(0, 10)}},
			want:   []Step{step(0, 1), step(10, 0), step(20, 1), step(30, 0)},
		},
		"empty intervals count for nothing": {
			byNode: map[string][]Interval{"a": {iv(5, 5)}, "b": {iv(0, 10)}},
			want:   []Step{step(0, 1), step(10, 0)},
		},
		"three starting together": {
			byNode: map[string][]Interval{"a": {iv(0, 10)}, "b": {iv(0, 20)}, "c": {iv(0, 10)}},
			want:   []Step{step(0, 3), step(10, 1), step(20, 0)},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := unavailableSteps(tt.byNode)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOverBudget(t *testing.T) {
	steps := []Step{{at(0), 1}, {at(5), 3}, {at(10), 2}, {at(30), 0}}
	for budget, want := range map[int]time.Duration{0: 30 * time.Second, 1: 25 * time.Second, 2: 5 * time.Second, 3: 0} {
		if got := overBudget(steps, budget); got != want {
			t.Errorf("over budget %d: %v, want %v", budget, got, want)
		}
	}
	if p := peak(steps); p != 3 {
		t.Errorf("peak %d, want 3", p)
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 10; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Second)
	}
	for p, want := range map[int]time.Duration{50: 5 * time.Second, 90: 9 * time.Second, 100: 10 * time.Second, 1: time.Second} {
		if got := percentile(ds, p); got != want {
			t.Errorf("p%d %v, want %v", p, got, want)
		}
	}
	if got := percentile([]time.Duration{7}, 90); got != 7 {
		t.Errorf("p90 of one: %v", got)
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("p50 of none: %v", got)
	}
}
