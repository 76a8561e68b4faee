package dashboards

import (
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
)

// Sample holds the values that stand in for the dashboards' variables when
// a query leaves Grafana: one pool, policy and node, and the intervals
// Grafana would compute from the time range.
type Sample struct {
	Pool   string // $pool (a single value; the dashboards match it with =~)
	Policy string // $policy
	Node   string // $node
	// RateInterval is $__rate_interval; "1m" when empty.
	RateInterval string
	// Interval is $__interval; "15s" when empty.
	Interval string
	// Range is $__range, the dashboard's time range; "1h" when empty.
	Range string
}

// Query is one panel query with its variables filled in.
type Query struct {
	Dashboard string // the dashboard's uid
	Panel     string // the panel's title
	RefID     string
	// Expr is the PromQL Grafana would send.
	Expr string
	// Instant is true for a query of the latest value only (table panels);
	// the others are range queries.
	Instant bool
}

// Queries returns every panel query of every dashboard, in layout order,
// with the variables filled in from s.
func Queries(s Sample) ([]Query, error) {
	ds, err := Build()
	if err != nil {
		return nil, err
	}
	var out []Query
	for _, file := range slices.Sorted(maps.Keys(ds)) {
		d := ds[file]
		for _, p := range d.Panels {
			if p.Panel == nil {
				continue
			}
			for _, t := range p.Panel.Targets {
				pq, ok := t.(prometheus.Dataquery)
				if !ok {
					return nil, fmt.Errorf("dashboard %s panel %q: query of type %T, not Prometheus", *d.Uid, deref(p.Panel.Title), t)
				}
				expr, err := s.Expand(pq.Expr)
				if err != nil {
					return nil, fmt.Errorf("dashboard %s panel %q: %w", *d.Uid, deref(p.Panel.Title), err)
				}
				out = append(out, Query{
					Dashboard: *d.Uid,
					Panel:     deref(p.Panel.Title),
					RefID:     deref(pq.RefId),
					Expr:      expr,
					Instant:   pq.Instant != nil && *pq.Instant,
				})
			}
		}
	}
	return out, nil
}

// variable is a Grafana variable reference: $name or ${name}.
var variable = regexp.MustCompile(`\$(\w+)|\$\{(\w+)\}`)

// Expand fills the dashboard variables in expr from s; a variable it does
// not know is an error.
func (s Sample) Expand(expr string) (string, error) {
	values := map[string]string{
		"pool":            s.Pool,
		"policy":          s.Policy,
		"node":            s.Node,
		"__rate_interval": or(s.RateInterval, "1m"),
		"__interval":      or(s.Interval, "15s"),
		"__range":         or(s.Range, "1h"),
	}
	var unknown []string
	out := variable.ReplaceAllStringFunc(expr, func(ref string) string {
		m := variable.FindStringSubmatch(ref)
		name := m[1] + m[2]
		v, ok := values[name]
		if !ok {
			unknown = append(unknown, ref)
			return ref
		}
		return v
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("unknown variables %v in %q", unknown, expr)
	}
	return out, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
