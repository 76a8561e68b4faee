package main

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	kpools "github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/policies"
)

// clusterState is what the API server holds, as kubectl would show it.
type clusterState struct {
	nodes        []corev1.Node
	maintenances []v1alpha1.NodeMaintenance
	pools        []v1alpha1.MaintenancePool
	policies     []v1alpha1.RebootPolicy
	// frag is each node's fragmentation as Prometheus has it; nil without
	// the metric part.
	frag map[string]float64
}

// step is a node's place on the reboot path: the phase of its furthest open
// NodeMaintenance, the phase its last one ended in, or Idle. The demo shows
// the API's words, not words of its own.
type step v1alpha1.Phase

// The steps, in order.
const (
	stepIdle      step = step(protocol.StageIdle)
	stepPending   step = step(v1alpha1.PhasePending)   // accepted, not yet raised by the daemon
	stepRequested step = step(v1alpha1.PhaseRequested) // raised on the node: waiting for admission
	stepDraining  step = step(v1alpha1.PhaseDraining)  // admitted: cordoned, pods evicted
	stepApproved  step = step(v1alpha1.PhaseApproved)  // drained, reboot approved for its boot
	stepRebooting step = step(v1alpha1.PhaseRebooting) // the daemon asked for the reboot
	stepSettling  step = step(v1alpha1.PhaseSettling)  // back, keeping its slot while its pool's health checks run
	stepBack      step = step(v1alpha1.PhaseSucceeded) // a new boot ID and Ready
	stepFailed    step = step(v1alpha1.PhaseFailed)
)

// steps lists the steps in order.
func steps() []step {
	return []step{stepIdle, stepPending, stepRequested, stepDraining, stepApproved, stepRebooting, stepSettling, stepBack, stepFailed}
}

// nodeRow is one node as the demo shows it.
type nodeRow struct {
	name, pool string
	step       step
	// source is where the node's requests came from, e.g. host or config.
	source string
	// since is when the node reached its step; zero when unknown.
	since       time.Time
	unavailable bool
	// todo: something asked this node to reboot.
	todo bool
	// frag is the node's fragmentation, when hasFrag.
	frag    float64
	hasFrag bool
	// candidate is the node as the policy's status has it: its state
	// (Pending, Requested, ...) and until when; empty if no candidate.
	candidate candidateRow
	// waiting is the reason an open request of the node waits (e.g.
	// OutsideWindow), from its Waiting condition.
	waiting string
	// hook says which hook the node waits for, or which failed; empty when
	// it waits for none.
	hook string
	// held says why the node's reboot sentinel asks for nothing though
	// the host wants a reboot (a reboot loop held), from its daemon's
	// state; empty otherwise.
	held string
}

// candidateRow is a node as a candidate of the policy.
type candidateRow struct {
	state string
	until time.Time
}

// poolRow is one pool's progress.
type poolRow struct {
	name                      string
	nodes, todo, back, failed int
	// goal is how many of the pool's nodes the demo waits to see
	// rebooted: those it planned to reboot before its first request, and
	// any other asked to since. It is the progress counter's denominator:
	// known up front, it stays put while requests arrive, so that a
	// person reads "1/6 back" as one sixth of the way, not as one of
	// however many requests have shown up yet.
	goal                        int
	unavailable, maxUnavailable int
	// spec is spec.maxUnavailable as written, e.g. 50%.
	spec string
	// settle is the pool's settle time: a rebooted node keeps its slot
	// that long, so each wave lasts it too.
	settle time.Duration
	// backByMetric counts the nodes back from reboots only a policy's
	// metric asked for.
	backByMetric int
	// halt says why the pool is halted by its health checks, with the
	// node, check and value; empty while it is not.
	halt string
	// resumedUpTo is the pool's kmaint.io/resume-halt, written by a
	// person (here, the demo) to resume it.
	resumedUpTo string
}

// policyRow is the demo's RebootPolicy and what its status says.
type policyRow struct {
	name, query, comparison, threshold string
	forDur                             time.Duration
	windows                            []v1alpha1.MaintenanceWindow
	parsed                             []policies.Window
	outcomes                           []v1alpha1.RebootOutcome
}

// window is the policy's windows' state at now.
func (p *policyRow) window(now time.Time) policies.WindowState {
	return policies.AnyOpen(p.parsed, now)
}

// view is the cluster in the demo's terms.
type view struct {
	pools []poolRow
	nodes []nodeRow
	// requests counts NodeMaintenances, open those not yet final.
	requests, open int
	// raised counts nodes whose requests are raised and not yet recorded.
	raised int
	// rolloutRequests and rolloutOpen count the requests of sources other
	// than metric, and those not yet final.
	rolloutRequests, rolloutOpen int
	// policy is the demo's RebootPolicy; nil without the metric part.
	policy *policyRow
}

// goal is what the demo waits for: the host and config requests, and the
// reboots of the nodes whose fragmentation goes past the threshold, with
// their outcomes recorded.
type goal struct {
	rollout int
	// nodes are the nodes the demo means to reboot, every source's, known
	// before the first request (see poolRow's goal).
	nodes  []string
	metric []string
	// sentinel is the node whose reboot sentinel stays after its reboot:
	// done once its daemon holds it as a reboot loop.
	sentinel string
}

// rolloutDone reports whether the host and config requests are all done.
func (v view) rolloutDone(g goal) bool {
	return v.rolloutRequests >= g.rollout && v.rolloutOpen == 0
}

// settled reports whether everything the demo waits for is done.
func (v view) settled(g goal) bool {
	if !v.done(g.rollout + len(g.metric)) {
		return false
	}
	if g.sentinel != "" && !slices.ContainsFunc(v.nodes, func(n nodeRow) bool { return n.name == g.sentinel && n.held != "" }) {
		return false
	}
	if len(g.metric) == 0 {
		return true
	}
	if v.policy == nil {
		return false
	}
	for _, node := range g.metric {
		i := slices.IndexFunc(v.policy.outcomes, func(o v1alpha1.RebootOutcome) bool { return o.Node == node })
		if i < 0 || v.policy.outcomes[i].ValueAfter == "" {
			return false
		}
	}
	return true
}

// done reports whether the expected requests all exist and are final, and
// every node asked to reboot has.
func (v view) done(expected int) bool {
	if v.requests < expected || v.open > 0 || v.raised > 0 {
		return false
	}
	for _, n := range v.nodes {
		if n.todo && n.step != stepBack && n.step != stepFailed {
			return false
		}
	}
	return true
}

// buildView builds the view of s; planned are the nodes the demo means to
// reboot (goal.nodes).
func buildView(s clusterState, planned []string) view {
	var v view
	byNode := map[string][]*v1alpha1.NodeMaintenance{}
	for i := range s.maintenances {
		nm := &s.maintenances[i]
		byNode[nm.Spec.NodeName] = append(byNode[nm.Spec.NodeName], nm)
		v.requests++
		if !nm.Status.Phase.Done() {
			v.open++
		}
		if nm.Spec.Source != v1alpha1.SourceMetric {
			v.rolloutRequests++
			if !nm.Status.Phase.Done() {
				v.rolloutOpen++
			}
		}
	}
	pools := slices.Clone(s.pools)
	slices.SortFunc(pools, func(a, b v1alpha1.MaintenancePool) int { return cmp.Compare(a.Name, b.Name) })
	rows := map[string]*poolRow{}
	for _, p := range pools {
		rows[p.Name] = &poolRow{name: p.Name, spec: "1", settle: p.Spec.Settle(), halt: haltText(&p), resumedUpTo: p.Annotations[v1alpha1.ResumeHaltAnnotation]}
		if p.Spec.MaxUnavailable != nil {
			rows[p.Name].spec = p.Spec.MaxUnavailable.String()
		}
	}
	selectors := kpools.Selectors(pools)
	for i := range s.nodes {
		n := &s.nodes[i]
		// A node in two pools shows the first; the pools report the conflict.
		pool := kpools.Of(n, selectors)[0]
		row := nodeRow{name: n.Name, pool: pool, unavailable: unavailable(n)}
		var raised bool
		row.step, row.source, row.since, raised = nodeStep(n, byNode[n.Name])
		if raised {
			v.raised++
		}
		row.todo = row.step != stepIdle || wantsConfig(n, pools, pool)
		row.frag, row.hasFrag = s.frag[n.Name]
		row.waiting = waitingReason(byNode[n.Name])
		st, _ := protocol.Read(n)
		if row.step == stepBack || row.step == stepIdle {
			row.held = heldText(st)
		}
		row.hook = hookText(st)
		v.nodes = append(v.nodes, row)
		p := rows[pool]
		if p == nil {
			continue
		}
		p.nodes++
		if row.unavailable {
			p.unavailable++
		}
		if row.todo {
			p.todo++
		}
		if row.todo || slices.Contains(planned, n.Name) {
			p.goal++
		}
		switch row.step {
		case stepBack:
			p.back++
			if row.source == string(v1alpha1.SourceMetric) {
				p.backByMetric++
			}
		case stepFailed:
			p.failed++
		}
	}
	slices.SortFunc(v.nodes, func(a, b nodeRow) int { return cmp.Compare(a.name, b.name) })
	for _, p := range pools {
		r := rows[p.Name]
		if mu, err := policies.ResolveMaxUnavailable(p.Spec.MaxUnavailable, r.nodes); err == nil {
			r.maxUnavailable = mu
		}
		v.pools = append(v.pools, *r)
	}
	if len(s.policies) > 0 {
		v.policy = buildPolicy(&s.policies[0], v.nodes)
	}
	return v
}

// buildPolicy reads the policy's spec and status, and puts its candidates on
// the node rows.
func buildPolicy(p *v1alpha1.RebootPolicy, nodes []nodeRow) *policyRow {
	row := &policyRow{name: p.Name, windows: p.Spec.Windows, outcomes: p.Status.Outcomes}
	if tr := p.Spec.Prometheus; tr != nil {
		row.query, row.comparison, row.threshold = tr.Query, string(tr.Comparison), tr.Threshold
		if tr.For != nil {
			row.forDur = tr.For.Duration
		}
	}
	row.parsed, _ = policies.ParseWindows(p.Spec.Windows)
	for _, c := range p.Status.Candidates {
		i := slices.IndexFunc(nodes, func(n nodeRow) bool { return n.name == c.Node })
		if i < 0 {
			continue
		}
		nodes[i].candidate = candidateRow{state: string(c.State)}
		if c.Until != nil {
			nodes[i].candidate.until = c.Until.Time
		}
	}
	return row
}

// haltText says why the pool is halted, in a demo line's room: the failed
// nodes with their check and value, or why the checks cannot run; empty
// while it is not halted.
func haltText(p *v1alpha1.MaintenancePool) string {
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.HaltedCondition)
	if c == nil || c.Status != metav1.ConditionTrue {
		return ""
	}
	h := p.Status.Halt
	if c.Reason != v1alpha1.HealthCheckFailedReason || h == nil || len(h.Nodes) == 0 {
		return fmt.Sprintf("HALTED (%s)", c.Reason)
	}
	var parts []string
	for _, n := range h.Nodes {
		parts = append(parts, fmt.Sprintf("%s failed health check %s (value %s)", n.Node, n.Check, n.Value))
	}
	return "HALTED: " + strings.Join(parts, ", ")
}

// heldText says, in a demo line's room, why the node's reboot sentinel asks
// for nothing; empty when it does not hold back.
func heldText(st protocol.NodeState) string {
	held := st.SentinelHeld()
	switch {
	case held == "":
		return ""
	case st.Daemon.Sentinel.State == protocol.SentinelRebootLoop:
		return "reboot loop held (event RebootLoop): the reboot sentinel is unchanged since the reboot it asked for; not asking again until it changes"
	case len(held) > 160:
		return held[:160] + "..."
	}
	return held
}

// hookText says which hook the node waits at, or which failed; empty when
// none.
func hookText(st protocol.NodeState) string {
	h := st.Hook
	switch {
	case h == nil || h.Passed():
		return ""
	case h.Failed() != nil:
		f := h.Failed()
		return fmt.Sprintf("hook %s (%s) failed: %s", f.Name, h.Point, f.Failure.Reason)
	}
	return fmt.Sprintf("at hook %s (%s)", strings.Join(h.Waiting(), ", "), h.Point)
}

// waitingReason is why the node's open requests wait, if they say.
func waitingReason(nms []*v1alpha1.NodeMaintenance) string {
	for _, nm := range nms {
		if nm.Status.Phase.Done() {
			continue
		}
		if c := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.WaitingCondition); c != nil && c.Status == metav1.ConditionTrue {
			return c.Reason
		}
	}
	return ""
}

// nodeStep reads a node's step off its NodeMaintenances: the furthest open
// one, else a request raised on the node and not yet recorded, else the last
// final one. raised reports the second case.
func nodeStep(n *corev1.Node, nms []*v1alpha1.NodeMaintenance) (st step, source string, since time.Time, raised bool) {
	state, _ := protocol.Read(n)
	var open, final []*v1alpha1.NodeMaintenance
	for _, nm := range nms {
		if nm.Status.Phase.Done() {
			final = append(final, nm)
		} else {
			open = append(open, nm)
		}
	}
	if len(open) > 0 {
		order := v1alpha1.PhaseOrder()
		furthest := slices.MaxFunc(open, func(a, b *v1alpha1.NodeMaintenance) int {
			return cmp.Compare(slices.Index(order, a.Status.Phase), slices.Index(order, b.Status.Phase))
		})
		phase := cmp.Or(furthest.Status.Phase, v1alpha1.PhasePending)
		// A request raised on the node is requested already when kmaint
		// records it: its record starts Pending until the maintenance
		// controller reads the node, and showing that would flap the
		// node Requested, Pending, Requested.
		if phase == v1alpha1.PhasePending && state.Current() != nil && state.Current().Has(furthest.RequestID()) {
			phase = v1alpha1.PhaseRequested
		}
		return step(phase), sources(open), phaseTime(furthest, phase), false
	}
	if state.Current() != nil {
		var srcs []string
		for _, r := range state.Current().Requests {
			srcs = append(srcs, string(r.Source))
		}
		return stepRequested, joinSet(srcs), state.Current().Earliest(), true
	}
	if len(final) > 0 {
		last := slices.MaxFunc(final, func(a, b *v1alpha1.NodeMaintenance) int {
			return phaseTime(a, a.Status.Phase).Compare(phaseTime(b, b.Status.Phase))
		})
		st = stepBack
		if last.Status.Phase == v1alpha1.PhaseFailed {
			st = stepFailed
		}
		return st, sources(final), phaseTime(last, last.Status.Phase), false
	}
	return stepIdle, "", time.Time{}, false
}

// phaseTime is when nm entered phase, or when it was created.
func phaseTime(nm *v1alpha1.NodeMaintenance, phase v1alpha1.Phase) time.Time {
	t := nm.Status.PhaseTimes.Get(phase)
	if t == nil {
		return nm.CreationTimestamp.Time
	}
	return t.Time
}

func sources(nms []*v1alpha1.NodeMaintenance) string {
	var srcs []string
	for _, nm := range nms {
		srcs = append(srcs, string(nm.Spec.Source))
	}
	return joinSet(srcs)
}

// joinSet joins the distinct strings, sorted, with "+".
func joinSet(s []string) string {
	sort.Strings(s)
	return strings.Join(slices.Compact(s), "+")
}

// wantsConfig reports whether the node's pool wants a config it does not run.
func wantsConfig(n *corev1.Node, pools []v1alpha1.MaintenancePool, pool string) bool {
	for _, p := range pools {
		if p.Name == pool && p.Spec.DesiredConfig != "" {
			return n.Annotations[protocol.CurrentConfig] != p.Spec.DesiredConfig
		}
	}
	return false
}

// unavailable is the gate's reading of a node that counts against its
// pool's budget: admitted, approved, cordoned or not Ready.
func unavailable(n *corev1.Node) bool {
	st, _ := protocol.Read(n)
	return st.Unavailable()
}
