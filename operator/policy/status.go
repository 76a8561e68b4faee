package policy

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/policies"
)

// outcome is what one reconcile found and did, for the status.
type outcome struct {
	now       time.Time
	last      *v1alpha1.RebootPolicyStatus
	suspended bool
	specErr   error
	facts     *facts
	eval      evaluation
	cap       int
	interval  time.Duration
	selection policies.Selection
	raised    int
	// freeze is what the policy's own freezes say at now.
	freeze policies.FreezeState
}

// status builds the policy's whole status from the reconcile's outcome.
func (r *Reconciler) status(p *v1alpha1.RebootPolicy, out *outcome) v1alpha1.RebootPolicyStatus {
	st := *out.last.DeepCopy()
	st.ObservedGeneration = p.Generation
	st.RequestsRaised += int64(out.raised)
	cond := func(t string, ok bool, reason, msg string) {
		c := metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: reason, Message: v1alpha1.FitMessage(msg), ObservedGeneration: p.Generation}
		if ok {
			c.Status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, c)
	}
	r.setFrozen(p, &st, out)
	switch {
	case out.suspended:
		st.Candidates, st.WouldRequest = nil, nil
		cond(v1alpha1.ReadyCondition, false, "Suspended", "The policy is suspended and evaluates nothing")
		return st
	case out.specErr != nil:
		st.Candidates, st.WouldRequest = nil, nil
		cond(v1alpha1.ReadyCondition, false, "InvalidSpec", out.specErr.Error())
		r.warnOnce(p, out.last, v1alpha1.ReadyCondition, "InvalidSpec", out.specErr.Error())
		return st
	}

	ev := out.eval
	if ev.ran && p.Spec.Prometheus != nil {
		st.LastEvaluationTime = &metav1.Time{Time: ev.at}
		st.LastEvaluationDuration = &metav1.Duration{Duration: ev.took}
	} else if ev.ran || st.LastEvaluationTime == nil {
		st.LastEvaluationTime = &metav1.Time{Time: ev.at}
	}
	if p.Spec.Schedule != nil && !ev.lastSchedule.IsZero() {
		st.LastScheduleTime = &metav1.Time{Time: ev.lastSchedule}
	}
	if p.Spec.Prometheus != nil {
		queryFailing, unreachable := classify(ev.err)
		cond(v1alpha1.QueryFailingCondition, queryFailing != "", "QueryError", queryFailing)
		cond(v1alpha1.PrometheusUnreachableCondition, unreachable != "", "Unreachable", unreachable)
		if ev.ran {
			r.warnOnce(p, out.last, v1alpha1.QueryFailingCondition, "QueryFailing", queryFailing)
			r.warnOnce(p, out.last, v1alpha1.PrometheusUnreachableCondition, "PrometheusUnreachable", unreachable)
			msg := ""
			if ev.unmatchedCount > 0 {
				msg = fmt.Sprintf("%d series name no known node by label %q (matched by %s), e.g. %s",
					ev.unmatchedCount, nodeLabel(p), matchBy(p), strings.Join(ev.unmatched, ", "))
			}
			cond(v1alpha1.UnmatchedSeriesCondition, msg != "", "NoNode", msg)
			r.warnOnce(p, out.last, v1alpha1.UnmatchedSeriesCondition, "UnmatchedSeries", msg)
		}
	}
	if ev.err != nil {
		cond(v1alpha1.ReadyCondition, false, "EvaluationFailed", fmt.Sprintf("No requests are raised while the trigger cannot be evaluated: %v", ev.err))
		st.Candidates = candidatesStatus(ev.candidates, nil, out)
		return st
	}
	sel := out.selection
	capMsg := ""
	if len(sel.OverCap) > 0 {
		capMsg = fmt.Sprintf("%d more nodes qualify than the cap of %d open requests (%d of %d selected nodes) allows; waiting: %s",
			len(sel.OverCap), out.cap, out.facts.ownOpen+len(sel.Raise), len(out.facts.selected), strings.Join(first(sel.OverCap, 10), ", "))
	}
	cond(v1alpha1.CapReachedCondition, capMsg != "", "TooManyCandidates", capMsg)
	r.warnOnce(p, out.last, v1alpha1.CapReachedCondition, "CapReached", capMsg)
	if held := out.facts.unreadable; len(held) > 0 {
		// Any of them may be a node's last reboot, which its cooldown
		// counts from, or an open request of this policy.
		msg := fmt.Sprintf("No requests are raised while NodeMaintenances cannot be read: %s", strings.Join(first(held, 10), "; "))
		cond(v1alpha1.ReadyCondition, false, v1alpha1.UnreadableMaintenanceReason, msg)
		r.warnOnce(p, out.last, v1alpha1.ReadyCondition, v1alpha1.UnreadableMaintenanceReason, msg)
	} else {
		cond(v1alpha1.ReadyCondition, true, "Evaluated", fmt.Sprintf("%d candidates, %d open requests", len(ev.candidates), out.facts.ownOpen+len(sel.Raise)))
	}

	st.WouldRequest = nil
	if p.Spec.DryRun {
		st.WouldRequest = append([]string(nil), sel.Raise...)
	}
	st.Candidates = candidatesStatus(ev.candidates, &sel, out)
	if p.Spec.DryRun {
		for i := range st.Candidates {
			if slices.Contains(sel.Raise, st.Candidates[i].Node) {
				st.Candidates[i].State = v1alpha1.CandidateWouldRequest
			}
		}
	}
	if p.Spec.Prometheus != nil {
		st.Outcomes = outcomes(st.Outcomes, out)
	}
	return st
}

func candidatesStatus(cs []policies.Candidate, sel *policies.Selection, out *outcome) []v1alpha1.Candidate {
	if len(cs) == 0 {
		return nil
	}
	res := make([]v1alpha1.Candidate, 0, len(cs))
	for _, c := range cs {
		vc := v1alpha1.Candidate{Node: c.Node, Since: metav1.Time{Time: c.Since}}
		if !math.IsNaN(c.Value) {
			vc.Value = formatValue(c.Value)
		}
		if sel != nil {
			switch {
			case !sel.Pending[c.Node].IsZero():
				vc.State, vc.Until = v1alpha1.CandidatePending, &metav1.Time{Time: sel.Pending[c.Node]}
			case !sel.Cooling[c.Node].IsZero():
				vc.State, vc.Until = v1alpha1.CandidateCooldown, &metav1.Time{Time: sel.Cooling[c.Node]}
			case slices.Contains(sel.OverCap, c.Node):
				vc.State = v1alpha1.CandidateOverCap
			default:
				vc.State = v1alpha1.CandidateRequested
			}
		}
		res = append(res, vc)
	}
	return res
}

// outcomes records, per node, this policy's last completed reboot with the
// value that asked for it and the first value evaluated after it. The first
// evaluations after a reboot may still see the old boot's last sample
// (Prometheus looks back five minutes for one), so the value after is taken
// no sooner than two evaluation intervals after the reboot completed: an
// exporter scraped at least as often as the policy evaluates has reported
// from the new boot by then.
func outcomes(prev []v1alpha1.RebootOutcome, out *outcome) []v1alpha1.RebootOutcome {
	byNode := map[string]v1alpha1.RebootOutcome{}
	for _, o := range prev {
		byNode[o.Node] = o
	}
	for node, nm := range out.facts.ownDone {
		o, ok := byNode[node]
		if !ok || o.NodeMaintenance != nm.Name {
			o = v1alpha1.RebootOutcome{
				Node:            node,
				NodeMaintenance: nm.Name,
				RebootedAt:      *nm.Status.PhaseTimes.Succeeded,
				ValueBefore:     nm.Annotations[v1alpha1.ValueAnnotation],
			}
			// The operator wrote it as a number; anything longer than the
			// status holds was written by someone else and is not shown.
			if len(o.ValueBefore) > 64 {
				o.ValueBefore = ""
			}
		}
		if v, seen := out.eval.values[node]; seen && o.ValueAfter == "" && out.eval.ran && !out.now.Before(o.RebootedAt.Add(2*out.interval)) {
			o.ValueAfter = formatValue(v)
		}
		byNode[node] = o
	}
	res := make([]v1alpha1.RebootOutcome, 0, len(byNode))
	for node, o := range byNode {
		if out.facts.selected[node] {
			res = append(res, o)
		}
	}
	if len(res) == 0 {
		return nil
	}
	sortOutcomes(res)
	return res
}

func classify(err error) (queryFailing, unreachable string) {
	if err == nil {
		return "", ""
	}
	var c *carried
	if errors.As(err, &c) {
		if c.condition == v1alpha1.QueryFailingCondition {
			return c.msg, ""
		}
		return "", c.msg
	}
	if policies.IsQueryError(err) {
		return err.Error(), ""
	}
	return "", err.Error()
}

// warnOnce emits a Warning when a condition turns true, not at every
// evaluation while it stays so.
func (r *Reconciler) warnOnce(p *v1alpha1.RebootPolicy, last *v1alpha1.RebootPolicyStatus, condType, reason, msg string) {
	if msg == "" {
		return
	}
	if prev := meta.FindStatusCondition(last.Conditions, condType); prev != nil && prev.Message == v1alpha1.FitMessage(msg) {
		return
	}
	r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, reason, "Evaluate", "%s", v1alpha1.FitMessage(msg))
}

func nodeLabel(p *v1alpha1.RebootPolicy) string {
	if l := p.Spec.Prometheus.NodeLabel; l != "" {
		return l
	}
	return "node"
}

func matchBy(p *v1alpha1.RebootPolicy) v1alpha1.NodeMatch {
	if m := p.Spec.Prometheus.MatchNodeBy; m != "" {
		return m
	}
	return v1alpha1.MatchNodeName
}

// equalStatus compares statuses as the API server would store them.
func equalStatus(a, b v1alpha1.RebootPolicyStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
}

func first(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(append([]string(nil), s[:n]...), "+"+strconv.Itoa(len(s)-n)+" more")
}

func sortOutcomes(os []v1alpha1.RebootOutcome) {
	slices.SortFunc(os, func(a, b v1alpha1.RebootOutcome) int { return cmp.Compare(a.Node, b.Node) })
}
