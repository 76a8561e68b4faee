package cmd

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// What a pool that guards its rollouts shows a person: nodes settling after
// their reboot, a halt after a failed health check, a freeze, canaries.
// The pool table says it in a word; the lines below the tables say why and
// what to do, since a halted pool waits for a person.

// guardState lists the pool table's words for the pool's guard: halted,
// frozen, waiting for canaries, nodes settling.
func guardState(p *v1alpha1.MaintenancePool) []string {
	st := p.Status
	var out []string
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.HaltedCondition); c != nil && c.Status == "True" {
		word := "HALTED"
		if c.Reason == v1alpha1.HealthCheckUnavailableReason {
			word += " (checks cannot run)"
		} else if st.Halt != nil && len(st.Halt.Nodes) > 0 {
			n := st.Halt.Nodes[len(st.Halt.Nodes)-1]
			word += fmt.Sprintf(": %s failed %s", n.Node, n.Check)
			if len(st.Halt.Nodes) > 1 {
				word += fmt.Sprintf(" (+%d)", len(st.Halt.Nodes)-1)
			}
		}
		out = append(out, word)
	}
	if st.Freeze != nil {
		out = append(out, "Frozen: "+st.Freeze.Name)
	} else if c := meta.FindStatusCondition(st.Conditions, v1alpha1.FrozenCondition); c != nil && c.Status == "True" {
		out = append(out, "Frozen")
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.BlockedCondition); c != nil && c.Status == "True" && c.Reason == v1alpha1.CanariesReason {
		out = append(out, "waiting for canaries")
	}
	if st.Settling > 0 {
		out = append(out, fmt.Sprintf("%d settling", st.Settling))
	}
	if st.AtHooks > 0 {
		out = append(out, fmt.Sprintf("%d at hooks", st.AtHooks))
	}
	return out
}

// guardBlocked reports whether a Blocked reason is one guardState already
// says in its own words.
func guardBlocked(reason string) bool {
	switch reason {
	case v1alpha1.HaltedReason, v1alpha1.FrozenReason, v1alpha1.CanariesReason,
		v1alpha1.HealthCheckFailedReason, v1alpha1.HealthCheckUnavailableReason, v1alpha1.HookFailedReason:
		return true
	}
	return false
}

// guardNotes says, for each pool held by its guard, why and what a person
// can do: for a halt, the nodes and checks that failed, how to look at
// them, and the commands that resume the pool or roll it back.
func guardNotes(rows []poolRow, now time.Time) []string {
	var out []string
	for _, r := range rows {
		if r.pool == nil || r.pool.Unreadable() != nil {
			continue
		}
		out = append(out, haltNote(r.pool, now)...)
		out = append(out, freezeNote(r.pool, now)...)
		out = append(out, canaryNote(r.pool)...)
	}
	return out
}

func haltNote(p *v1alpha1.MaintenancePool, now time.Time) []string {
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.HaltedCondition)
	if c == nil || c.Status != "True" {
		return nil
	}
	if c.Reason == v1alpha1.HealthCheckUnavailableReason || p.Status.Halt == nil || len(p.Status.Halt.Nodes) == 0 {
		return []string{
			fmt.Sprintf("Pool %s is HALTED (%s) since %s: %s", p.Name, c.Reason, when(c.LastTransitionTime.Time, now), c.Message),
			"  No node is admitted and no settling node passes until its health checks run again; the halt lifts by itself then.",
		}
	}
	h := p.Status.Halt
	lines := []string{fmt.Sprintf("Pool %s is HALTED since %s: no node is admitted until it is resumed.", p.Name, when(h.Since.Time, now))}
	var names []string
	for _, n := range h.Nodes {
		if v1alpha1.IsHookHalt(n) {
			lines = append(lines, fmt.Sprintf("  node %s: hook %q failed (%s) at %s; a resume runs it again", n.Node, n.Check, n.Value, stamp(n.Time.Time)))
		} else {
			lines = append(lines, fmt.Sprintf("  node %s: health check %q failed with value %s at %s", n.Node, n.Check, or(n.Value), stamp(n.Time.Time)))
		}
		if n.Message != "" {
			lines = append(lines, "    "+ellipsis(n.Message, 200))
		}
		names = append(names, n.Node)
	}
	lines = append(lines,
		fmt.Sprintf("  look:      kubectl describe node %s; kubectl kmaint history %s", names[0], names[0]),
		fmt.Sprintf("  resume:    kubectl kmaint resume %s   (the failed node(s) give up their slot as they are)", p.Name))
	if h.Resume == v1alpha1.ResumeOnRecovery {
		lines = append(lines, "  or wait:   it resumes by itself once the check passes again for a whole settle time (resume: OnRecovery)")
	}
	if p.Spec.DesiredConfig != "" {
		lines = append(lines, fmt.Sprintf("  roll back: kubectl kmaint rollout %s --config <the config before %s>, then resume", p.Name, p.Spec.DesiredConfig))
	}
	return lines
}

func freezeNote(p *v1alpha1.MaintenancePool, now time.Time) []string {
	f := p.Status.Freeze
	if f == nil {
		// Frozen without a freeze in force: one that cannot be read
		// (InvalidFreeze) holds the pool, fail closed.
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.FrozenCondition); c != nil && c.Status == "True" {
			return []string{fmt.Sprintf("Pool %s is FROZEN (%s): %s", p.Name, c.Reason, c.Message)}
		}
		return nil
	}
	line := fmt.Sprintf("Pool %s is FROZEN by freeze %s", p.Name, f.Name)
	if f.Reason != "" {
		line += fmt.Sprintf(" (%s)", f.Reason)
	}
	line += fmt.Sprintf(" until %s: nothing new is admitted; only requests made with --ignore-freezes pass.", until(f.End.Time, now))
	return []string{line}
}

func canaryNote(p *v1alpha1.MaintenancePool) []string {
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.BlockedCondition)
	if c == nil || c.Status != "True" || c.Reason != v1alpha1.CanariesReason {
		return nil
	}
	return []string{fmt.Sprintf("Pool %s waits for its canaries: %s", p.Name, c.Message)}
}

// settleReason is a settling node's reason: until when it settles and how
// its health checks stand, or the check that failed and what to do.
func settleReason(s *protocol.Settle, open []v1alpha1.NodeMaintenance) string {
	if f := s.Failure; f != nil {
		// The series last: it is long, and a narrow table cuts it first.
		msg := fmt.Sprintf("health check %q failed (value %s) at %s", f.Check, or(f.Value), stamp(f.Time))
		if s.Pool != "" {
			msg += fmt.Sprintf("; pool %s halted: kubectl kmaint resume %s", s.Pool, s.Pool)
		}
		if f.Series != "" {
			msg += "; series " + f.Series
		}
		return msg
	}
	msg := "settling until " + stamp(s.Until)
	for _, nm := range open {
		c := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.HealthyCondition)
		if c == nil {
			continue
		}
		switch {
		case c.Reason == v1alpha1.HealthCheckingReason:
			msg += "; health checks pass so far"
		case c.Reason == v1alpha1.HealthCheckUnavailableReason:
			msg += "; health checks cannot run: " + c.Message
		case c.Status == "False":
			msg += fmt.Sprintf("; health checks: %s: %s", c.Reason, c.Message)
		default:
			msg += "; health checks: " + c.Reason
		}
		break
	}
	return msg
}

// stamp is a moment as the API shows it, in UTC to the second.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// when is a past moment and how long ago it was.
func when(t, now time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return fmt.Sprintf("%s (%s ago)", stamp(t), age(now, t))
}

// until is a future moment and how long until it.
func until(t, now time.Time) string {
	if !t.After(now) {
		return stamp(t)
	}
	return fmt.Sprintf("%s (in %s)", stamp(t), age(t, now))
}
