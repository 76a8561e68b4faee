package report

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/policies"
)

// GonePool names the group of maintenances whose node is no longer in the
// cluster, so that no pool can be told for them.
const GonePool = "(deleted nodes)"

// Report is a cluster's reboot history, ready to be written as a page.
type Report struct {
	// Now is the moment the report describes; open maintenances run to it.
	Now time.Time
	// Span is the time the timelines cover.
	Span Interval
	// Pools are the pools with nodes or maintenances, by name, the default
	// pool last but for GonePool.
	Pools []Pool
	// Summary sums the history up.
	Summary Summary
}

// Pool is one pool's part of the history.
type Pool struct {
	Name string
	// Nodes is the number of nodes the pool selects now.
	Nodes int
	// MaxUnavailable is the pool's budget resolved for Nodes; Budget is how
	// the pool spells it. BudgetError says why it could not be resolved.
	MaxUnavailable int
	Budget         string
	BudgetError    string
	// Rows has one row per node with maintenances, by node name.
	Rows []Row
	// Steps counts the pool's unavailable nodes over time, as the phases
	// of its maintenances tell.
	Steps []Step
	// Peak is the most nodes unavailable at once; OverBudget is how long
	// more than MaxUnavailable were.
	Peak       int
	OverBudget time.Duration
	// Counts are its maintenances by source and outcome.
	Counts []SourceCounts
	// Halt is the pool's halt now (status.halt): the nodes whose health
	// checks failed; nil while it is not halted.
	Halt *v1alpha1.PoolHalt
}

// Row is one node's maintenances.
type Row struct {
	Node string
	// AlsoIn names the other pools that select the node: it is admitted
	// nowhere.
	AlsoIn    []string
	Timelines []Timeline
}

// SourceCounts counts one source's maintenances by outcome.
type SourceCounts struct {
	Source                  v1alpha1.Source
	Succeeded, Failed, Open int
}

// Summary is the history summed up.
type Summary struct {
	Maintenances int
	Succeeded    int
	Failed       int
	Open         int
	// Makespan runs from the first request to the last end; Running is true
	// when some maintenance is still open, so it is still growing.
	Makespan time.Duration
	Running  bool
	// Phases are percentiles of the time spent in each kind of stretch
	// (those at hooks only when some maintenance had one), then of
	// Unavailable (admission to the end) and Total (first phase to back),
	// over finished maintenances.
	Phases []PhaseStat
	// Failures lists the failed maintenances, in time order.
	Failures []Timeline
	// CheckFailures lists the maintenances whose node failed a health
	// check after its reboot, in time order.
	CheckFailures []Timeline
	// Hooks is true when some maintenance spent time at hooks.
	Hooks bool
	// Halted counts the pools halted now.
	Halted int
}

// PhaseStat is the distribution of one kind of duration.
type PhaseStat struct {
	Name          string
	N             int
	P50, P90, Max time.Duration
}

// Build computes the report of these maintenances, pools and nodes at now.
// Maintenances still open run to now. Pools are as they are now: a node's
// pool and a pool's budget are today's, applied to the whole history. It
// fails only on inputs that cannot be one cluster's, such as two
// NodeMaintenances of one name.
func Build(items []v1alpha1.NodeMaintenance, mpools []v1alpha1.MaintenancePool, nodes []corev1.Node, now time.Time) (*Report, error) {
	r := &Report{Now: now}
	seen := make(map[string]bool, len(items))
	for i := range items {
		if seen[items[i].Name] {
			return nil, fmt.Errorf("two NodeMaintenances named %q", items[i].Name)
		}
		seen[items[i].Name] = true
	}
	selectors := pools.Selectors(mpools)
	specs := map[string]*v1alpha1.MaintenancePool{}
	for i := range mpools {
		specs[mpools[i].Name] = &mpools[i]
	}

	// Which pools each node is in, and each pool's size.
	poolsOf := map[string][]string{}
	size := map[string]int{}
	for i := range nodes {
		names := pools.Of(&nodes[i], selectors)
		poolsOf[nodes[i].Name] = names
		for _, p := range names {
			size[p]++
		}
	}

	timelines := make([]Timeline, 0, len(items))
	for i := range items {
		timelines = append(timelines, timelineOf(&items[i], now))
	}
	slices.SortFunc(timelines, func(a, b Timeline) int {
		return cmp.Or(a.Start().Compare(b.Start()), cmp.Compare(a.Name, b.Name))
	})

	// Rows per pool; a node in two pools shows in both.
	rows := map[string]map[string]*Row{}
	for _, t := range timelines {
		names, ok := poolsOf[t.Node]
		if !ok {
			names = []string{GonePool}
		}
		for _, p := range names {
			if rows[p] == nil {
				rows[p] = map[string]*Row{}
			}
			row := rows[p][t.Node]
			if row == nil {
				row = &Row{Node: t.Node}
				for _, q := range names {
					if q != p {
						row.AlsoIn = append(row.AlsoIn, q)
					}
				}
				rows[p][t.Node] = row
			}
			row.Timelines = append(row.Timelines, t)
		}
	}

	var names []string
	for i := range mpools {
		if mpools[i].Name != v1alpha1.DefaultPoolName {
			names = append(names, mpools[i].Name)
		}
	}
	slices.Sort(names)
	names = append(names, v1alpha1.DefaultPoolName, GonePool)
	for _, name := range names {
		if size[name] == 0 && len(rows[name]) == 0 && specs[name] == nil {
			continue
		}
		r.Pools = append(r.Pools, buildPool(name, specs[name], size[name], rows[name]))
	}

	r.Span = span(timelines, now)
	r.Summary = summarize(timelines)
	for _, p := range r.Pools {
		if p.Halt != nil {
			r.Summary.Halted++
		}
	}
	return r, nil
}

func buildPool(name string, spec *v1alpha1.MaintenancePool, size int, rows map[string]*Row) Pool {
	p := Pool{Name: name, Nodes: size, MaxUnavailable: 1, Budget: "1"}
	if spec != nil && spec.Spec.MaxUnavailable != nil {
		p.Budget = spec.Spec.MaxUnavailable.String()
		n, err := policies.ResolveMaxUnavailable(spec.Spec.MaxUnavailable, size)
		if err != nil {
			p.BudgetError = err.Error()
		}
		p.MaxUnavailable = n
	}
	if name == GonePool {
		p.Budget, p.MaxUnavailable = "", 0
	}
	if spec != nil && spec.Status.Halt != nil && len(spec.Status.Halt.Nodes) > 0 {
		p.Halt = spec.Status.Halt
	}
	byNode := map[string][]Interval{}
	counts := map[v1alpha1.Source]*SourceCounts{}
	for _, row := range rows {
		p.Rows = append(p.Rows, *row)
		for _, t := range row.Timelines {
			if iv, ok := t.Unavailable(); ok {
				byNode[row.Node] = append(byNode[row.Node], iv)
			}
			c := counts[t.Source]
			if c == nil {
				c = &SourceCounts{Source: t.Source}
				counts[t.Source] = c
			}
			switch t.Phase {
			case v1alpha1.PhaseSucceeded:
				c.Succeeded++
			case v1alpha1.PhaseFailed:
				c.Failed++
			default:
				c.Open++
			}
		}
	}
	slices.SortFunc(p.Rows, func(a, b Row) int { return cmp.Compare(a.Node, b.Node) })
	for _, c := range counts {
		p.Counts = append(p.Counts, *c)
	}
	slices.SortFunc(p.Counts, func(a, b SourceCounts) int { return cmp.Compare(a.Source, b.Source) })
	p.Steps = unavailableSteps(byNode)
	p.Peak = peak(p.Steps)
	if name != GonePool {
		p.OverBudget = overBudget(p.Steps, p.MaxUnavailable)
	}
	return p
}

// span is the time the timelines cover, at least a minute, ending no
// earlier than the last timeline (and at now when one is still open).
func span(timelines []Timeline, now time.Time) Interval {
	var iv Interval
	for i, t := range timelines {
		s, e := t.Start(), t.End()
		if i == 0 || s.Before(iv.Start) {
			iv.Start = s
		}
		if i == 0 || e.After(iv.End) {
			iv.End = e
		}
	}
	if len(timelines) == 0 {
		iv = Interval{Start: now.Add(-time.Hour), End: now}
	}
	if iv.Duration() < time.Minute {
		iv.End = iv.Start.Add(time.Minute)
	}
	return iv
}

func summarize(timelines []Timeline) Summary {
	var s Summary
	durations := map[string][]time.Duration{}
	var first, last time.Time
	for i, t := range timelines {
		s.Maintenances++
		switch t.Phase {
		case v1alpha1.PhaseSucceeded:
			s.Succeeded++
		case v1alpha1.PhaseFailed:
			s.Failed++
			s.Failures = append(s.Failures, t)
		default:
			s.Open++
			s.Running = true
		}
		if !t.CheckFailed.IsZero() {
			s.CheckFailures = append(s.CheckFailures, t)
		}
		for _, seg := range t.Segments {
			s.Hooks = s.Hooks || seg.Kind.Hooks()
		}
		if i == 0 || t.Start().Before(first) {
			first = t.Start()
		}
		if i == 0 || t.End().After(last) {
			last = t.End()
		}
		if !t.Done() {
			continue
		}
		for _, k := range Kinds() {
			if d, ok := t.Time(k); ok {
				durations[string(k)] = append(durations[string(k)], d)
			}
		}
		if iv, ok := t.Unavailable(); ok {
			durations["unavailable"] = append(durations["unavailable"], iv.Duration())
		}
		if t.Phase == v1alpha1.PhaseSucceeded {
			durations["total"] = append(durations["total"], t.End().Sub(t.Start()))
		}
	}
	s.Makespan = last.Sub(first)
	var names []string
	for _, k := range Kinds() {
		// A cluster without hooks has no stretches at them to sum up.
		if !k.Hooks() || len(durations[string(k)]) > 0 {
			names = append(names, string(k))
		}
	}
	for _, name := range append(names, "unavailable", "total") {
		ds := durations[name]
		st := PhaseStat{Name: name, N: len(ds)}
		if len(ds) > 0 {
			st.P50, st.P90 = percentile(ds, 50), percentile(ds, 90)
			st.Max = ds[len(ds)-1]
		}
		s.Phases = append(s.Phases, st)
	}
	slices.SortFunc(s.Failures, func(a, b Timeline) int { return a.Failed.Compare(b.Failed) })
	slices.SortFunc(s.CheckFailures, func(a, b Timeline) int { return a.CheckFailed.Compare(b.CheckFailed) })
	return s
}

// String is a one-line account of the report, for logs.
func (r *Report) String() string {
	s := r.Summary
	return fmt.Sprintf("%d maintenances (%d succeeded, %d failed, %d open) in %d pools over %s",
		s.Maintenances, s.Succeeded, s.Failed, s.Open, len(r.Pools), r.Span.Duration().Round(time.Second))
}
