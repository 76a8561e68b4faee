package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// summary is how the requests went, against the best the budgets allow.
type summary struct {
	requests, succeeded, failed int
	// metric counts the requests a policy's metric raised.
	metric int
	// makespan runs from the first request to the demo seeing the last done.
	makespan time.Duration
	// ideal is the slowest pool's ideal: pools reboot side by side.
	ideal      time.Duration
	rebootTime time.Duration
	pools      []poolSummary
	latencies  []latency
}

// poolSummary is one pool's ideal: its rebooted nodes in full waves of
// maxUnavailable, each wave one reboot time and the pool's settle time
// long, and the time the pool stood halted waiting for a person.
type poolSummary struct {
	name                            string
	rebooted, maxUnavailable, waves int
	spec                            string
	settle, halted                  time.Duration
	ideal                           time.Duration
}

// latency is one span between two phase times, over succeeded requests.
type latency struct {
	name, span string
	p50, max   time.Duration
	n          int
}

// spans are the phase latencies the summary reports.
var spans = []struct {
	name, span string
	from, to   func(*v1alpha1.PhaseTimes) *metav1.Time
}{
	{"waiting for admission", "requested → draining",
		func(t *v1alpha1.PhaseTimes) *metav1.Time { return t.Requested }, func(t *v1alpha1.PhaseTimes) *metav1.Time { return t.Draining }},
	{"draining", "draining → rebooting",
		func(t *v1alpha1.PhaseTimes) *metav1.Time { return t.Draining }, func(t *v1alpha1.PhaseTimes) *metav1.Time { return t.Rebooting }},
	{"rebooting", "rebooting → succeeded",
		func(t *v1alpha1.PhaseTimes) *metav1.Time { return t.Rebooting }, func(t *v1alpha1.PhaseTimes) *metav1.Time { return t.Succeeded }},
}

func summarize(v view, nms []v1alpha1.NodeMaintenance, makespan, rebootTime time.Duration, halted map[string]time.Duration) summary {
	s := summary{requests: len(nms), makespan: makespan, rebootTime: rebootTime}
	for _, p := range v.pools {
		if p.todo == 0 {
			continue
		}
		// Reboots the policy asked for are summarized on their own.
		ps := poolSummary{name: p.name, rebooted: p.back - p.backByMetric, maxUnavailable: p.maxUnavailable, spec: p.spec,
			settle: p.settle, halted: halted[p.name].Round(100 * time.Millisecond)}
		if p.maxUnavailable > 0 {
			ps.waves = (ps.rebooted + p.maxUnavailable - 1) / p.maxUnavailable
		}
		ps.ideal = time.Duration(ps.waves)*(rebootTime+ps.settle) + ps.halted
		s.ideal = max(s.ideal, ps.ideal)
		s.pools = append(s.pools, ps)
	}
	var succeeded []v1alpha1.NodeMaintenance
	for _, nm := range nms {
		if nm.Spec.Source == v1alpha1.SourceMetric {
			s.metric++
		}
		switch nm.Status.Phase {
		case v1alpha1.PhaseSucceeded:
			succeeded = append(succeeded, nm)
		case v1alpha1.PhaseFailed:
			s.failed++
		}
	}
	s.succeeded = len(succeeded)
	for _, sp := range spans {
		var ds []time.Duration
		for _, nm := range succeeded {
			from, to := sp.from(&nm.Status.PhaseTimes), sp.to(&nm.Status.PhaseTimes)
			if from != nil && to != nil {
				ds = append(ds, to.Sub(from.Time))
			}
		}
		l := latency{name: sp.name, span: sp.span, n: len(ds)}
		if len(ds) > 0 {
			slices.Sort(ds)
			l.p50, l.max = ds[(len(ds)+1)/2-1], ds[len(ds)-1]
		}
		s.latencies = append(s.latencies, l)
	}
	s.latencies = append(s.latencies, hookLatencies(succeeded)...)
	return s
}

// hookLatencies are the stretches at each point's hooks (status.hookTimes)
// over the succeeded requests that had them: from reaching the point to
// its last hook's pass, or for afterReboot to the completion when the pass
// went unseen (the node is completed the moment they pass).
func hookLatencies(succeeded []v1alpha1.NodeMaintenance) []latency {
	var out []latency
	for _, point := range []string{"beforeDrain", "beforeReboot", "afterReboot"} {
		var ds []time.Duration
		for _, nm := range succeeded {
			for _, h := range nm.Status.HookTimes {
				end := h.Passed
				if end == nil && point == "afterReboot" {
					end = nm.Status.PhaseTimes.Succeeded
				}
				if h.Point == point && end != nil {
					ds = append(ds, end.Sub(h.Started.Time))
				}
			}
		}
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		out = append(out, latency{name: "at hooks", span: point, n: len(ds), p50: ds[(len(ds)+1)/2-1], max: ds[len(ds)-1]})
	}
	return out
}

// medianDrainAndReboot is the median time from draining to succeeded of
// the succeeded requests: on real nodes, the wave time the ideal is
// measured in (zero without any).
func medianDrainAndReboot(nms []v1alpha1.NodeMaintenance) time.Duration {
	var ds []time.Duration
	for _, nm := range nms {
		t := nm.Status.PhaseTimes
		if nm.Status.Phase == v1alpha1.PhaseSucceeded && t.Draining != nil && t.Succeeded != nil {
			ds = append(ds, t.Succeeded.Sub(t.Draining.Time))
		}
	}
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[(len(ds)+1)/2-1]
}

// printSummary prints s; measured says the reboot time is the median
// measured here rather than the simulation's.
func printSummary(out io.Writer, s summary, measured bool) {
	fmt.Fprintf(out, "\nAll %d requests done: %d Succeeded, %d Failed.\n\n", s.requests, s.succeeded, s.failed)
	tw := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "POOL\tREBOOTED\tMAX UNAVAILABLE\tWAVES\tIDEAL")
	for _, p := range s.pools {
		limit := fmt.Sprint(p.maxUnavailable)
		if strings.HasSuffix(p.spec, "%") {
			limit += " (" + p.spec + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\n", p.name, p.rebooted, limit, p.waves, p.ideal)
	}
	_ = tw.Flush()
	ratio := "n/a"
	if s.ideal > 0 {
		ratio = fmt.Sprintf("%.2f", float64(s.makespan)/float64(s.ideal))
	}
	fmt.Fprintf(out, "\nmakespan %s, ideal %s, ratio %s\n", elapsed(s.makespan), s.ideal, ratio)
	wave := s.rebootTime.String()
	if measured {
		wave += ", the median drain and reboot measured here"
	}
	fmt.Fprintf(out, "  (ideal: pools reboot side by side; each takes ceil(rebooted / maxUnavailable) waves of %s", wave)
	for _, p := range s.pools {
		if p.settle > 0 || p.halted > 0 {
			fmt.Fprintf(out, "; %s's waves last its settle time %s more, and it stood halted %s, waiting for a person", p.name, p.settle, p.halted)
		}
	}
	fmt.Fprintln(out, ")")
	if s.metric > 0 {
		fmt.Fprintf(out, "  (host and config requests; the %d the policy raised waited for its window, below)\n", s.metric)
	}

	fmt.Fprintf(out, "\nPhase latencies over %d succeeded requests (phaseTimes have a resolution of 1s):\n", s.succeeded)
	tw = tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "  PHASE\tSPAN\tP50\tMAX")
	for _, l := range s.latencies {
		if l.n == 0 {
			fmt.Fprintf(tw, "  %s\t%s\t-\t-\n", l.name, l.span)
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", l.name, l.span, l.p50, l.max)
	}
	_ = tw.Flush()
}

// printMetricSummary says what the policy's reboots did: each fragmented
// node's value before and after, and that it was approved inside the window;
// and which fragmented node was left alone.
func printMetricSummary(out io.Writer, v view, s clusterState, plan *metricPlan) {
	p := v.policy
	if p == nil {
		return
	}
	fmt.Fprintf(out, "\nRebootPolicy %s: %s %s %s for %s", p.name, p.query, p.comparison, p.threshold, p.forDur)
	for _, w := range p.windows {
		fmt.Fprintf(out, ", window %q %s for %s", w.Schedule, cmp.Or(w.TimeZone, "UTC"), w.Duration.Duration)
	}
	fmt.Fprintln(out)
	byName := map[string]*v1alpha1.NodeMaintenance{}
	for i := range s.maintenances {
		byName[s.maintenances[i].Name] = &s.maintenances[i]
	}
	tw := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "  NODE\tFRAGMENTATION BEFORE → AFTER\tADMITTED\tREBOOTED")
	for _, o := range p.outcomes {
		approved := "-"
		if nm := byName[o.NodeMaintenance]; nm != nil && nm.Status.PhaseTimes.Draining != nil {
			at := nm.Status.PhaseTimes.Draining.Time
			where := "inside the window"
			if !p.window(at).Open {
				where = "OUTSIDE the window"
			}
			approved = fmt.Sprintf("%s UTC, %s", at.UTC().Format(time.TimeOnly), where)
		}
		fmt.Fprintf(tw, "  %s\t%s → %s\t%s\t%s UTC\n", o.Node, cmp.Or(o.ValueBefore, "-"), cmp.Or(o.ValueAfter, "-"), approved, o.RebootedAt.UTC().Format(time.TimeOnly))
	}
	_ = tw.Flush()
	for _, r := range plan.rises {
		if r.over {
			continue
		}
		i := slices.IndexFunc(v.nodes, func(n nodeRow) bool { return n.name == r.node })
		if i >= 0 && v.nodes[i].step == stepIdle {
			fmt.Fprintf(out, "  %s rose to %s, under the threshold: left alone.\n", r.node, fragText(v.nodes[i]))
		}
	}
}
