package policies

import (
	"cmp"
	"fmt"
	"math"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Threshold is a parsed comparison of a query value with a number.
type Threshold struct {
	Value      float64
	Comparison v1alpha1.Comparison
}

// ParseThreshold reads a trigger's threshold and comparison.
func ParseThreshold(t *v1alpha1.PrometheusTrigger) (Threshold, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(t.Threshold), 64)
	if err != nil || math.IsNaN(v) {
		return Threshold{}, fmt.Errorf("threshold %q is not a number", t.Threshold)
	}
	c := t.Comparison
	if c == "" {
		c = v1alpha1.GreaterThan
	}
	switch c {
	case v1alpha1.GreaterThan, v1alpha1.GreaterThanOrEqual, v1alpha1.LessThan, v1alpha1.LessThanOrEqual:
	default:
		return Threshold{}, fmt.Errorf("comparison %q is not one of >, >=, <, <=", c)
	}
	return Threshold{Value: v, Comparison: c}, nil
}

// Holds reports whether value meets the threshold. NaN never does: a NaN
// sample says the exporter could not measure, not that the node is bad.
func (t Threshold) Holds(value float64) bool {
	if math.IsNaN(value) {
		return false
	}
	switch t.Comparison {
	case v1alpha1.GreaterThan:
		return value > t.Value
	case v1alpha1.GreaterThanOrEqual:
		return value >= t.Value
	case v1alpha1.LessThan:
		return value < t.Value
	case v1alpha1.LessThanOrEqual:
		return value <= t.Value
	}
	return false
}

// worse reports whether a is further past the threshold than b, so that of
// several series naming one node the one that matters most is kept.
func (t Threshold) worse(a, b float64) bool {
	if math.IsNaN(b) {
		return !math.IsNaN(a)
	}
	switch t.Comparison {
	case v1alpha1.LessThan, v1alpha1.LessThanOrEqual:
		return a < b
	}
	return a > b
}

// String says the comparison the way a reason reads it, e.g. "> 0.9".
func (t Threshold) String() string {
	return fmt.Sprintf("%s %s", t.Comparison, strconv.FormatFloat(t.Value, 'g', -1, 64))
}

// NodeResolver maps a series label value to a node name.
type NodeResolver struct {
	byName    map[string]bool
	byAddress map[string]string
	match     v1alpha1.NodeMatch
}

// NewNodeResolver indexes nodes by name, or by their status addresses
// (InternalIP, ExternalIP, Hostname, ...) when match is Address.
func NewNodeResolver(nodes []corev1.Node, match v1alpha1.NodeMatch) NodeResolver {
	r := NodeResolver{byName: map[string]bool{}, byAddress: map[string]string{}, match: match}
	for i := range nodes {
		r.byName[nodes[i].Name] = true
		for _, a := range nodes[i].Status.Addresses {
			r.byAddress[a.Address] = nodes[i].Name
		}
	}
	return r
}

// Resolve returns the node a label value names. An address may carry a port,
// as Prometheus's instance label does ("10.0.0.5:9100").
func (r NodeResolver) Resolve(value string) (string, bool) {
	if r.match != v1alpha1.MatchNodeAddress {
		return value, r.byName[value]
	}
	if n, ok := r.byAddress[value]; ok {
		return n, true
	}
	if host, _, err := net.SplitHostPort(value); err == nil {
		n, ok := r.byAddress[host]
		return n, ok
	}
	return "", false
}

// Values is one evaluation's result mapped onto nodes.
type Values struct {
	// ByNode is each known node's value; with several series for a node the
	// one furthest past the threshold.
	ByNode map[string]float64
	// Unmatched describes series that name no known node, or have no node
	// label, at most maxUnmatched of them, for the policy's status.
	Unmatched []string
	// UnmatchedCount counts all such series.
	UnmatchedCount int
}

const maxUnmatched = 5

// MapSeries maps an instant vector onto nodes by label. NaN samples are
// dropped; stale series never reach an instant query's result.
func MapSeries(vec model.Vector, label string, nodes NodeResolver, t Threshold) Values {
	out := Values{ByNode: map[string]float64{}}
	for _, s := range vec {
		v := float64(s.Value)
		if math.IsNaN(v) {
			continue
		}
		name, ok := nodes.Resolve(string(s.Metric[model.LabelName(label)]))
		if !ok {
			out.UnmatchedCount++
			if len(out.Unmatched) < maxUnmatched {
				out.Unmatched = append(out.Unmatched, s.Metric.String())
			}
			continue
		}
		if old, seen := out.ByNode[name]; !seen || t.worse(v, old) {
			out.ByNode[name] = v
		}
	}
	return out
}

// Candidate is a node meeting a trigger, and since when.
type Candidate struct {
	Node  string
	Since time.Time
	// Value is the node's last value; NaN for triggers without one.
	Value float64
}

// Track carries the pending clocks over one evaluation, as Prometheus does
// for an alerting rule's `for`: a node that meets the threshold keeps the
// time it started to; one that does not loses its clock. A node rebooted
// since its clock started starts again at the reboot, because the values
// before it describe a boot that is gone.
func Track(prev []Candidate, values map[string]float64, t Threshold, lastReboot map[string]time.Time, now time.Time) []Candidate {
	since := make(map[string]time.Time, len(prev))
	for _, c := range prev {
		since[c.Node] = c.Since
	}
	var out []Candidate
	for node, v := range values {
		if !t.Holds(v) {
			continue
		}
		s, ok := since[node]
		if !ok || s.After(now) {
			s = now
		}
		out = append(out, Candidate{Node: node, Since: afterReboot(s, lastReboot[node]), Value: v})
	}
	SortCandidates(out)
	return out
}

// SortCandidates orders candidates by since, then name: the order requests
// are raised in.
func SortCandidates(cs []Candidate) {
	slices.SortFunc(cs, func(a, b Candidate) int {
		if c := a.Since.Compare(b.Since); c != 0 {
			return c
		}
		return cmp.Compare(a.Node, b.Node)
	})
}

// Guards are what stands between a candidate and a request.
type Guards struct {
	// For is how long a candidate must have met the trigger.
	For time.Duration
	// Cooldown is the least time from a node's last reboot to a request.
	Cooldown time.Duration
	// LastReboot is each node's last completed reboot, whatever caused it.
	LastReboot map[string]time.Time
	// Open holds the nodes with an open request of any source: a reboot is
	// on its way, and a second request would only be a duplicate.
	Open map[string]bool
	// OpenByPolicy counts the policy's own open requests, for the cap.
	OpenByPolicy int
	// Cap is the most open requests the policy may have.
	Cap int
}

// Selection is which candidates get a request now, and why the others wait.
type Selection struct {
	// Raise lists the nodes to request a reboot for, in order.
	Raise []string
	// Pending are candidates still inside For, with when they qualify.
	Pending map[string]time.Time
	// Cooling are qualified nodes inside their cooldown, with when it ends.
	Cooling map[string]time.Time
	// OverCap are qualified nodes left out because the cap is reached.
	OverCap []string
	// Next is the earliest moment a waiting candidate may qualify or leave
	// its cooldown; zero if none waits for time.
	Next time.Time
}

// Select applies For, the cooldown and the cap to candidates, in their
// order.
func Select(cands []Candidate, g Guards, now time.Time) Selection {
	sel := Selection{Pending: map[string]time.Time{}, Cooling: map[string]time.Time{}}
	free := g.Cap - g.OpenByPolicy
	later := func(t time.Time) {
		if sel.Next.IsZero() || t.Before(sel.Next) {
			sel.Next = t
		}
	}
	for _, c := range cands {
		if g.Open[c.Node] {
			continue
		}
		if due := c.Since.Add(g.For); due.After(now) {
			sel.Pending[c.Node] = due
			later(due)
			continue
		}
		if last, ok := g.LastReboot[c.Node]; ok && g.Cooldown > 0 {
			if end := last.Add(g.Cooldown); end.After(now) {
				sel.Cooling[c.Node] = end
				later(end)
				continue
			}
		}
		if free <= 0 {
			sel.OverCap = append(sel.OverCap, c.Node)
			continue
		}
		free--
		sel.Raise = append(sel.Raise, c.Node)
	}
	sort.Strings(sel.OverCap)
	return sel
}
