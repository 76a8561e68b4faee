package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/alertwebhook"
	"github.com/kmaint/kmaint/policies"
)

// spec is a policy's spec, parsed and checked.
type spec struct {
	threshold policies.Threshold
	schedule  policies.Schedule
	condition policies.ConditionTrigger
	forDur    time.Duration
	interval  time.Duration
	cooldown  time.Duration
}

const defaultInterval = 30 * time.Second

func parseSpec(p *v1alpha1.RebootPolicy) (spec, error) {
	s := spec{interval: defaultInterval, cooldown: 24 * time.Hour}
	if c := p.Spec.Cooldown; c != nil {
		s.cooldown = c.Duration
	}
	for i, w := range p.Spec.Windows {
		if _, err := policies.ParseWindow(w); err != nil {
			return s, &specError{field: fmt.Sprintf("spec.windows[%d]", i), err: err}
		}
	}
	switch {
	case p.Spec.Prometheus != nil:
		t := p.Spec.Prometheus
		th, err := policies.ParseThreshold(t)
		if err != nil {
			return s, &specError{field: "spec.prometheus", err: err}
		}
		s.threshold = th
		if t.For != nil {
			s.forDur = t.For.Duration
		}
		if t.Interval != nil && t.Interval.Duration > 0 {
			s.interval = t.Interval.Duration
		}
	case p.Spec.Schedule != nil:
		sched, err := policies.ParseSchedule(p.Spec.Schedule)
		if err != nil {
			return s, &specError{field: "spec.schedule", err: err}
		}
		s.schedule = sched
	case p.Spec.Alert != nil:
	case p.Spec.NodeCondition != nil:
		c, err := policies.ParseConditionTrigger(p.Spec.NodeCondition)
		if err != nil {
			return s, &specError{field: "spec.nodeCondition", err: err}
		}
		s.condition, s.forDur = c, c.For
	default:
		return s, &specError{field: "spec", err: errors.New("no trigger: set one of prometheus, schedule, alert or nodeCondition")}
	}
	return s, nil
}

// evaluation is one reconcile's reading of a policy's trigger.
type evaluation struct {
	// ran is true when the trigger was evaluated in this reconcile, rather
	// than carried over from the last evaluation.
	ran  bool
	at   time.Time
	took time.Duration
	// candidates are the nodes meeting the trigger.
	candidates []policies.Candidate
	// values are this evaluation's query values by node.
	values map[string]float64
	// unmatched describes series naming no known node.
	unmatched      []string
	unmatchedCount int
	// err says why the trigger could not be evaluated.
	err error
	// next is when the trigger should be evaluated again; zero for never.
	next time.Time
	// lastSchedule is the schedule's last fire acted on.
	lastSchedule time.Time
}

// evaluate reads the policy's trigger. A Prometheus query runs at most once
// per interval however often the policy reconciles; in between, the last
// evaluation's candidates stand.
func (r *Reconciler) evaluate(ctx context.Context, p *v1alpha1.RebootPolicy, last *v1alpha1.RebootPolicyStatus, s spec, f *facts, now time.Time) evaluation {
	prev := fromStatus(last, p.Generation)
	switch {
	case p.Spec.Prometheus != nil:
		return r.evaluateQuery(ctx, p.Spec.Prometheus, last, p.Generation, s, f, prev, now)
	case p.Spec.Schedule != nil:
		return evaluateSchedule(p, last, s, f, prev, now)
	case p.Spec.NodeCondition != nil:
		return evaluateCondition(s, f, prev, now)
	default:
		return evaluateAlerts(p, f, now)
	}
}

func (r *Reconciler) evaluateQuery(ctx context.Context, t *v1alpha1.PrometheusTrigger, last *v1alpha1.RebootPolicyStatus, generation int64, s spec, f *facts, prev []policies.Candidate, now time.Time) evaluation {
	if at := last.LastEvaluationTime; at != nil && last.ObservedGeneration == generation && now.Before(at.Add(s.interval)) && !at.After(now) {
		return evaluation{at: at.Time, candidates: prev, next: at.Add(s.interval), err: carriedError(last)}
	}
	ev := evaluation{ran: true, at: now, next: now.Add(s.interval), candidates: prev}
	if r.Prometheus == nil {
		ev.err = errNoPrometheus
		return ev
	}
	start := r.Clock.Now()
	vec, err := r.Prometheus.Query(ctx, t.Query, now)
	ev.took = r.Clock.Since(start)
	if err != nil {
		// The pending clocks stand, as an alerting rule's do when its
		// query fails: nothing is raised until the query holds again.
		ev.err = err
		return ev
	}
	nodes := policies.NewNodeResolver(f.nodes, t.MatchNodeBy)
	label := t.NodeLabel
	if label == "" {
		label = "node"
	}
	vals := policies.MapSeries(vec, label, nodes, s.threshold)
	ev.unmatched, ev.unmatchedCount = vals.Unmatched, vals.UnmatchedCount
	ev.values = map[string]float64{}
	for node, v := range vals.ByNode {
		if f.selected[node] {
			ev.values[node] = v
		}
	}
	var holding []string
	for node, v := range ev.values {
		if s.threshold.Holds(v) {
			holding = append(holding, node)
		}
	}
	ev.candidates = policies.Track(prev, ev.values, s.threshold, f.lastReboots(holding, now), now)
	return ev
}

var errNoPrometheus = errors.New("no Prometheus is configured: start the operator with --prometheus-url")

// carriedError restores, between evaluations, the failure the last one
// reported, so a reconcile in between cannot make a failing policy look
// healthy.
func carriedError(last *v1alpha1.RebootPolicyStatus) error {
	for _, c := range last.Conditions {
		if c.Status == "True" && (c.Type == v1alpha1.QueryFailingCondition || c.Type == v1alpha1.PrometheusUnreachableCondition) {
			return &carried{condition: c.Type, msg: c.Message}
		}
	}
	return nil
}

type carried struct{ condition, msg string }

func (c *carried) Error() string { return c.msg }

func evaluateSchedule(p *v1alpha1.RebootPolicy, last *v1alpha1.RebootPolicyStatus, s spec, f *facts, prev []policies.Candidate, now time.Time) evaluation {
	// A new policy does not fire for times before it existed.
	from := p.CreationTimestamp.Time
	if last.LastScheduleTime != nil && last.LastScheduleTime.After(from) {
		from = last.LastScheduleTime.Time
	}
	fire, next := s.schedule.Due(from, now)
	ev := evaluation{at: now, next: next, lastSchedule: from}
	byNode := map[string]policies.Candidate{}
	for _, c := range prev {
		// A node whose request for the fire exists is done with: a
		// person who deletes that request cancels it for this fire.
		if !f.requested(c.Node, requestName(p.Name, c.Node, f.boot[c.Node], c.Since)) {
			byNode[c.Node] = c
		}
	}
	if !fire.IsZero() {
		// A fire starts a new round for every node, whatever the last
		// one left undone.
		ev.ran, ev.lastSchedule = true, fire
		for node := range f.selected {
			byNode[node] = policies.Candidate{Node: node, Since: fire, Value: math.NaN()}
		}
	}
	for node, c := range byNode {
		// A node that left the selection, or rebooted since the fire, is
		// done with.
		if !f.selected[node] || f.lastReboot(node, now).After(c.Since) {
			continue
		}
		ev.candidates = append(ev.candidates, c)
	}
	policies.SortCandidates(ev.candidates)
	return ev
}

// evaluateAlerts reads the policy's alert record: the nodes with an alert
// episode firing now are candidates, since the episode's start, which also
// names the request, so an episode asks once per boot. An episode stops
// counting when it ends, when it expires for lack of news, and when the
// node completes a reboot after its start: that reboot was its answer.
func evaluateAlerts(p *v1alpha1.RebootPolicy, f *facts, now time.Time) evaluation {
	ev := evaluation{ran: true, at: now}
	raw, ok := p.Annotations[v1alpha1.FiringAlertsAnnotation]
	if !ok {
		return ev
	}
	record, err := alertwebhook.ParseRecord(raw)
	if err != nil {
		ev.err = fmt.Errorf("annotation %s: %w", v1alpha1.FiringAlertsAnnotation, err)
		return ev
	}
	// Come back when an episode expires, so the status drops it on time.
	var nodes []string
	for node := range record {
		if f.selected[node] {
			nodes = append(nodes, node)
		}
	}
	firing, expires := record.Firing(now, f.lastReboots(nodes, now))
	ev.next = expires
	for node, since := range firing {
		if f.selected[node] {
			ev.candidates = append(ev.candidates, policies.Candidate{Node: node, Since: since, Value: math.NaN()})
		}
	}
	policies.SortCandidates(ev.candidates)
	return ev
}

// fromStatus reads the candidates the last evaluation left, unless the spec
// changed since: a new query or schedule starts its clocks afresh.
func fromStatus(last *v1alpha1.RebootPolicyStatus, generation int64) []policies.Candidate {
	if last.ObservedGeneration != generation {
		return nil
	}
	out := make([]policies.Candidate, 0, len(last.Candidates))
	for _, c := range last.Candidates {
		v := math.NaN()
		if c.Value != "" {
			if parsed, err := strconv.ParseFloat(c.Value, 64); err == nil {
				v = parsed
			}
		}
		out = append(out, policies.Candidate{Node: c.Node, Since: c.Since.Time, Value: v})
	}
	return out
}
