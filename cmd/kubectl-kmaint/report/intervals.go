package report

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Kind is what a stretch of a maintenance's time went to.
type Kind string

// The kinds of stretches, in the order a maintenance goes through them.
const (
	// KindDaemon: Pending, waiting for the node's daemon to journal and
	// raise the request.
	KindDaemon Kind = "daemon"
	// KindGate: Requested, waiting for the pool's gate to admit the node
	// (budget, windows, blocking queries, pause).
	KindGate Kind = "gate"
	// KindDraining: admitted (Draining): cordoned, pods evicted.
	KindDraining Kind = "draining"
	// KindRebooting: drained, reboot approved (Approved, Rebooting), until
	// the node is back Ready with a new boot ID.
	KindRebooting Kind = "rebooting"
	// KindSettling: back, and keeping its slot for the pool's settle time
	// and health checks (Settling), until it passed them or the pool's
	// halt was resumed.
	KindSettling Kind = "settling"
	// KindBeforeDrain, KindBeforeReboot and KindAfterReboot: at the pool's
	// hooks of that point (status.hookTimes), until they all passed: a
	// stretch of the drain, of the wait for the approval, and of the node's
	// return.
	KindBeforeDrain  Kind = "before-drain"
	KindBeforeReboot Kind = "before-reboot"
	KindAfterReboot  Kind = "after-reboot"
)

// Kinds lists the kinds in path order.
func Kinds() []Kind {
	return []Kind{KindDaemon, KindGate, KindBeforeDrain, KindDraining, KindBeforeReboot, KindRebooting, KindAfterReboot, KindSettling}
}

// Hooks reports whether the kind is a stretch at a pool's hooks.
func (k Kind) Hooks() bool {
	return k == KindBeforeDrain || k == KindBeforeReboot || k == KindAfterReboot
}

// Unavailable reports whether a node in a stretch of this kind counts
// against its pool's budget, as the gate counts it: from its admission on,
// hooks and settling included, it keeps its slot.
func (k Kind) Unavailable() bool { return k != KindDaemon && k != KindGate }

// Interval is a span of time, [Start, End).
type Interval struct {
	Start, End time.Time
}

// Duration is the interval's length.
func (i Interval) Duration() time.Duration { return i.End.Sub(i.Start) }

// Segment is one stretch of a maintenance: the time between entering a phase
// and entering the next phase recorded.
type Segment struct {
	Kind Kind
	Interval
	// Open is true when the maintenance is still in this phase: End is the
	// report's now.
	Open bool
	// Hooks names the hooks of a stretch at hooks.
	Hooks []string
}

// Timeline is one NodeMaintenance's path through its phases.
type Timeline struct {
	Name   string
	Node   string
	Source v1alpha1.Source
	Reason string
	Policy string
	Phase  v1alpha1.Phase
	// Segments are in time order, without gaps and without empty ones.
	Segments []Segment
	// Back is when the node came back (Succeeded); zero otherwise.
	Back time.Time
	// Failed is when the maintenance failed; zero unless it did.
	Failed time.Time
	// FailReason and FailMessage say why it failed.
	FailReason, FailMessage string
	// BootBefore and BootAfter are the boot IDs before and after.
	BootBefore, BootAfter string
	// CheckFailed is when a health check of the node's pool failed for it
	// after its reboot (its Healthy condition went False); zero unless one
	// did. CheckReason is the condition's reason now: HealthCheckFailed
	// while the pool is halted for it, HaltResumed once a person resumed
	// it; CheckMessage names the check and its value.
	CheckFailed               time.Time
	CheckReason, CheckMessage string
}

// Start is when the timeline begins: its first segment, or the moment it
// ended when it has none (a request refused at once).
func (t *Timeline) Start() time.Time {
	if len(t.Segments) > 0 {
		return t.Segments[0].Start
	}
	return t.End()
}

// End is when the timeline ends: the moment it succeeded or failed, or the
// end of its last (open) segment.
func (t *Timeline) End() time.Time {
	switch {
	case !t.Back.IsZero():
		return t.Back
	case !t.Failed.IsZero():
		return t.Failed
	case len(t.Segments) > 0:
		return t.Segments[len(t.Segments)-1].End
	}
	return time.Time{}
}

// Done reports whether the maintenance is over.
func (t *Timeline) Done() bool { return t.Phase.Done() }

// Time sums the time spent in stretches of a kind.
func (t *Timeline) Time(k Kind) (d time.Duration, ok bool) {
	for _, s := range t.Segments {
		if s.Kind == k {
			d += s.Duration()
			ok = true
		}
	}
	return d, ok
}

// Unavailable is the span in which the maintenance held its node
// unavailable: from admission to the end. ok is false when it was never
// admitted.
func (t *Timeline) Unavailable() (Interval, bool) {
	for _, s := range t.Segments {
		if s.Kind.Unavailable() {
			return Interval{Start: s.Start, End: t.Segments[len(t.Segments)-1].End}, true
		}
	}
	return Interval{}, false
}

// mark is a recorded phase time and the kind of stretch it starts, and
// the hooks of a stretch at hooks.
type mark struct {
	kind  Kind
	at    *metav1.Time
	hooks []string
}

// hookMarks are the marks of a point's hooks: the stretch at them from
// when the node reached the point, and, unless then is empty, the kind
// after it from when they passed. Nothing for a point the node did not
// reach.
func hookMarks(s *v1alpha1.NodeMaintenanceStatus, point string, kind, then Kind) []mark {
	for _, h := range s.HookTimes {
		if h.Point != point {
			continue
		}
		marks := []mark{{kind: kind, at: &h.Started, hooks: h.Hooks}}
		if then != "" {
			marks = append(marks, mark{kind: then, at: h.Passed})
		}
		return marks
	}
	return nil
}

// timelineOf reads a NodeMaintenance's phase times into a Timeline. A phase
// without a time is one nobody saw: the stretch before it runs on to the next
// phase that has one. Times out of order (clock skew between writers) are
// clamped so that stretches never run backwards. An open maintenance's last
// stretch ends at now.
func timelineOf(nm *v1alpha1.NodeMaintenance, now time.Time) Timeline {
	s := nm.Status
	t := Timeline{
		Name: nm.Name, Node: nm.Spec.NodeName, Source: nm.Spec.Source, Reason: nm.Spec.Reason,
		Policy: nm.Spec.Policy, Phase: s.Phase, BootBefore: s.BootIDBefore, BootAfter: s.BootIDAfter,
	}
	pt := s.PhaseTimes
	// Approved ends the drain. Records written before Approved came after
	// Draining stamped it at admission, with Draining: such a time marks
	// nothing.
	approved := pt.Approved
	if approved != nil && pt.Draining != nil && !approved.After(pt.Draining.Time) {
		approved = nil
	}
	// Stretches at hooks lie within the phases: beforeDrain at the start
	// of the drain, beforeReboot at its end, afterReboot once the node is
	// back and before it settles.
	var marks []mark
	marks = append(marks, mark{kind: KindDaemon, at: pt.Pending}, mark{kind: KindGate, at: pt.Requested}, mark{kind: KindDraining, at: pt.Draining})
	marks = append(marks, hookMarks(&s, "beforeDrain", KindBeforeDrain, KindDraining)...)
	marks = append(marks, hookMarks(&s, "beforeReboot", KindBeforeReboot, KindDraining)...)
	marks = append(marks, mark{kind: KindRebooting, at: approved}, mark{kind: KindRebooting, at: pt.Rebooting})
	// The node is completed (or settles) the moment its afterReboot hooks
	// pass: the next phase ends their stretch.
	marks = append(marks, hookMarks(&s, "afterReboot", KindAfterReboot, "")...)
	marks = append(marks, mark{kind: KindSettling, at: pt.Settling})
	var end *metav1.Time
	switch s.Phase {
	case v1alpha1.PhaseSucceeded:
		end = pt.Succeeded
	case v1alpha1.PhaseFailed:
		end = pt.Failed
		t.FailMessage = s.Message
		t.FailReason = "Failed"
		if c := meta.FindStatusCondition(s.Conditions, v1alpha1.SucceededCondition); c != nil && c.Reason != "" {
			t.FailReason = c.Reason
		}
	}

	if c := meta.FindStatusCondition(s.Conditions, v1alpha1.HealthyCondition); c != nil && c.Status == metav1.ConditionFalse &&
		c.Reason != v1alpha1.HealthCheckUnavailableReason {
		t.CheckFailed, t.CheckReason, t.CheckMessage = c.LastTransitionTime.Time, c.Reason, c.Message
	}

	var known []mark
	var last time.Time
	for _, m := range marks {
		if m.at == nil {
			continue
		}
		at := m.at.Time
		if at.Before(last) {
			at = last
		}
		last = at
		known = append(known, mark{kind: m.kind, at: &metav1.Time{Time: at}, hooks: m.hooks})
	}
	if len(known) == 0 && !s.Phase.Done() && !nm.CreationTimestamp.IsZero() {
		// Nothing stamped yet: it waits from the moment it was created.
		known = append(known, mark{kind: KindDaemon, at: &nm.CreationTimestamp})
		last = nm.CreationTimestamp.Time
	}

	var stop time.Time
	switch {
	case end != nil:
		stop = end.Time
		if stop.Before(last) {
			stop = last
		}
	case s.Phase.Done():
		// Over, but when is unknown: the last stretch ends where it began.
		stop = last
	default:
		stop = now
		if stop.Before(last) {
			stop = last
		}
	}
	for i, m := range known {
		until := stop
		if i+1 < len(known) {
			until = known[i+1].at.Time
		}
		t.Segments = append(t.Segments, Segment{Kind: m.kind, Interval: Interval{Start: m.at.Time, End: until}, Open: i+1 == len(known) && !s.Phase.Done(), Hooks: m.hooks})
	}
	t.Segments = slices.DeleteFunc(t.Segments, func(s Segment) bool { return !s.End.After(s.Start) && !s.Open })
	// Stretches of one kind in a row (a drain cut by its beforeDrain
	// hooks that took no time) are one.
	merged := t.Segments[:0]
	for _, seg := range t.Segments {
		if n := len(merged); n > 0 && merged[n-1].Kind == seg.Kind {
			merged[n-1].End, merged[n-1].Open = seg.End, seg.Open
			continue
		}
		merged = append(merged, seg)
	}
	t.Segments = merged

	switch s.Phase {
	case v1alpha1.PhaseSucceeded:
		t.Back = stop
	case v1alpha1.PhaseFailed:
		t.Failed = stop
		if stop.IsZero() && !nm.CreationTimestamp.IsZero() {
			t.Failed = nm.CreationTimestamp.Time
		}
	}
	return t
}

// Step is a count that holds from At until the next step.
type Step struct {
	At    time.Time
	Count int
}

// unavailableSteps counts, over time, the nodes that are unavailable, given
// each node's unavailable intervals. A node held by two maintenances at once
// counts once. Where one node comes back at the moment another leaves, the
// count does not spike: an interval's end is counted before a start at the
// same instant. The last step has count 0 (every interval ends).
func unavailableSteps(byNode map[string][]Interval) []Step {
	type event struct {
		at    time.Time
		delta int
	}
	var events []event
	for _, ivs := range byNode {
		for _, iv := range union(ivs) {
			events = append(events, event{iv.Start, +1}, event{iv.End, -1})
		}
	}
	slices.SortFunc(events, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.delta, b.delta)
	})
	var steps []Step
	count := 0
	for i, e := range events {
		count += e.delta
		if i+1 < len(events) && events[i+1].at.Equal(e.at) {
			continue
		}
		if n := len(steps); n > 0 && steps[n-1].Count == count {
			continue
		}
		steps = append(steps, Step{At: e.at, Count: count})
	}
	return steps
}

// union merges overlapping or touching intervals, dropping empty ones.
func union(ivs []Interval) []Interval {
	ivs = slices.Clone(ivs)
	ivs = slices.DeleteFunc(ivs, func(iv Interval) bool { return !iv.End.After(iv.Start) })
	slices.SortFunc(ivs, func(a, b Interval) int { return a.Start.Compare(b.Start) })
	var out []Interval
	for _, iv := range ivs {
		if n := len(out); n > 0 && !iv.Start.After(out[n-1].End) {
			if iv.End.After(out[n-1].End) {
				out[n-1].End = iv.End
			}
			continue
		}
		out = append(out, iv)
	}
	return out
}

// peak is the highest count of the steps.
func peak(steps []Step) int {
	p := 0
	for _, s := range steps {
		p = max(p, s.Count)
	}
	return p
}

// overBudget sums the time the count exceeded budget.
func overBudget(steps []Step, budget int) time.Duration {
	var d time.Duration
	for i := 0; i+1 < len(steps); i++ {
		if steps[i].Count > budget {
			d += steps[i+1].At.Sub(steps[i].At)
		}
	}
	return d
}

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of ds, which
// it sorts; 0 for none.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	rank := (p*len(ds) + 99) / 100
	return ds[max(rank, 1)-1]
}
