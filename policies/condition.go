package policies

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// ConditionTrigger is a parsed node condition trigger.
type ConditionTrigger struct {
	Type   corev1.NodeConditionType
	Status corev1.ConditionStatus
	For    time.Duration
}

// ParseConditionTrigger reads a node condition trigger and fills its
// defaults. The CRD refuses what it refuses too; it checks again for a
// policy stored before the CRD did, or by a client past admission.
func ParseConditionTrigger(t *v1alpha1.NodeConditionTrigger) (ConditionTrigger, error) {
	c := ConditionTrigger{Type: corev1.NodeConditionType(t.Type), Status: t.Status}
	if c.Type == "" {
		return c, fmt.Errorf("type is empty: name a node condition type, e.g. KernelDeadlock")
	}
	if c.Status == "" {
		c.Status = corev1.ConditionTrue
	}
	switch c.Status {
	case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
	default:
		return c, fmt.Errorf("status %q is not one of True, False, Unknown", t.Status)
	}
	if t.For != nil {
		c.For = t.For.Duration
	}
	if c.For < 0 || c.For > v1alpha1.MaxNodeConditionFor {
		return c, fmt.Errorf("for %s is not from 0s to %s", c.For, v1alpha1.MaxNodeConditionFor)
	}
	return c, nil
}

// Held says whether the node's condition of the trigger's type has the
// wanted status, and the condition's lastTransitionTime as its writer gave
// it. A node without the condition does not hold; nor does one that lists
// the type twice with different statuses (a writer's mistake): what kmaint
// cannot read asks for nothing.
func (c ConditionTrigger) Held(n *corev1.Node) (transition time.Time, ok bool) {
	for i := range n.Status.Conditions {
		cond := &n.Status.Conditions[i]
		if cond.Type != c.Type {
			continue
		}
		if cond.Status != c.Status {
			return time.Time{}, false
		}
		ok = true
		if t := cond.LastTransitionTime.Time; t.After(transition) {
			transition = t
		}
	}
	return transition, ok
}

// TrackHeld carries the clocks of a node condition trigger over one
// evaluation. held maps each node whose condition has the wanted status to
// the condition's lastTransitionTime. A node that holds keeps the time the
// operator first saw it hold (its candidate of the last evaluation); one
// that does not loses its clock, so a condition that leaves the status
// starts again from nothing.
//
// The clock starts when kmaint saw the condition, never at its
// lastTransitionTime: whoever may write a Node's status writes that time
// too, and a date in the past would skip For. The writer's time is used
// one way only, to start a clock later: a lastTransitionTime after the
// clock's start says the condition changed status since, and came back,
// between two evaluations (both changes reached the operator before it
// looked again), so the clock starts at that time, or now if that lies in
// the future. A writer can delay a reboot that way, as it can by clearing
// the condition; it cannot hasten one. A node's clock ahead of the
// operator's delays its hold by the difference, once.
//
// A node rebooted since its clock started starts again at the reboot, as
// Track does: the condition before it described a boot that is gone.
func TrackHeld(prev []Candidate, held map[string]time.Time, lastReboot map[string]time.Time, now time.Time) []Candidate {
	since := make(map[string]time.Time, len(prev))
	for _, c := range prev {
		since[c.Node] = c.Since
	}
	out := make([]Candidate, 0, len(held))
	for node, transition := range held {
		s, ok := since[node]
		if !ok || s.After(now) {
			s = now
		}
		if transition.After(s) {
			s = earlier(transition, now)
		}
		out = append(out, Candidate{Node: node, Since: afterReboot(s, lastReboot[node]), Value: math.NaN()})
	}
	SortCandidates(out)
	return out
}

// afterReboot restarts a clock that started at since at the node's last
// reboot, when that came later. Reboot times come from NodeMaintenance
// phase times, which keep whole seconds: a reboot in the clock's first
// second restarts it.
func afterReboot(since, reboot time.Time) time.Time {
	if !reboot.IsZero() && !reboot.Before(since.Truncate(time.Second)) {
		return reboot
	}
	return since
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
