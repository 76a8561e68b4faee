package checker

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
)

// checkAdmission notes a new admission of node with what the node watch
// shows of its pool at that moment. It is held to the budget later
// (settle): the pools' watch may deliver the pool's change that came before
// it after it.
func (c *Checker) checkAdmission(now time.Time, n *corev1.Node, a admission) {
	pool := a.Pool
	if pool == "" {
		pool = n.Labels[c.PoolLabel]
	}
	p := pendingAdmission{at: now, version: versionOf(n.ResourceVersion), node: n.Name, pool: pool}
	for name, r := range c.nodes {
		if c.poolOf(r.node) != pool {
			continue
		}
		switch {
		case madeUnavailable(r.node):
			p.made = append(p.made, name)
		case name != n.Name && !r.downSince.IsZero() && now.Sub(r.downSince) >= c.Grace:
			p.down = append(p.down, fmt.Sprintf("%s since %s", name, r.downSince.Format(time.TimeOnly)))
		}
	}
	sort.Strings(p.made)
	sort.Strings(p.down)
	c.pending = append(c.pending, p)
}

// settle holds every pending admission to its pool's budget.
func (c *Checker) settle() {
	for _, p := range c.pending {
		budget, known := c.budget(p.pool, p.at, p.version)
		c.checked[Budget]++
		switch {
		case !known:
			c.violate(p.at, Budget, "node %s admitted in pool %q, which the checker never saw", p.node, p.pool)
		case len(p.made) > budget:
			c.violate(p.at, Budget, "pool %s: node %s admitted (v%d) with %d nodes made unavailable by kmaint, budget %d: %v (%s)",
				p.pool, p.node, p.version, len(p.made), budget, p.made, c.budgetsSince(p.pool, p.at.Add(-time.Minute)))
		case len(p.made)-1+len(p.down) >= budget:
			c.violate(p.at, Budget, "pool %s: node %s admitted while %d others were unavailable (%v by kmaint, %v down), budget %d (%s)",
				p.pool, p.node, len(p.made)-1+len(p.down), p.made, p.down, budget, c.budgetsSince(p.pool, p.at.Add(-time.Minute)))
		}
	}
	c.pending = nil
}

// versionOf reads a resourceVersion as etcd's number, 0 when it is not one.
func versionOf(rv string) int64 {
	v, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// budgetsSince describes the pool's budgets from a moment on, for a
// violation's message.
func (c *Checker) budgetsSince(pool string, from time.Time) string {
	var parts []string
	for _, b := range c.pools[pool].budgets {
		if !b.at.Before(from) {
			parts = append(parts, fmt.Sprintf("%d at %s (v%d)", b.budget, b.at.Format("15:04:05.000"), b.version))
		}
	}
	if len(parts) == 0 {
		return "budget unchanged in the last minute"
	}
	return "budgets seen: " + strings.Join(parts, ", ")
}

// budget is the largest budget the pool had over the Grace before an
// admission seen at a, of version v: a budget lowered (or a pool paused) a
// moment before may not be in the gate's cache yet. A pool's change of a
// later version than the admission does not count, and one of an earlier
// version does, even delivered after it.
func (c *Checker) budget(pool string, at time.Time, v int64) (int, bool) {
	r := c.pools[pool]
	if r == nil || len(r.budgets) == 0 {
		return 0, false
	}
	best := -1
	for i := len(r.budgets) - 1; i >= 0; i-- {
		b := r.budgets[i]
		before := b.version < v
		if b.version == 0 || v == 0 {
			before = !b.at.After(at)
		}
		if !before {
			continue
		}
		best = max(best, b.budget)
		if at.Sub(b.at) >= c.Grace {
			break
		}
	}
	return best, best >= 0
}

// poolOf is the pool a node counts against: the pool that admitted it
// while its maintenance lasts (its admission, then its settle record, name
// it), else its label's. kmaint promises that a node in flight stays with
// the pool that admitted it, whatever its labels say meanwhile.
func (c *Checker) poolOf(n *corev1.Node) string {
	for _, key := range []string{protocol.Admitted, protocol.Settling} {
		var rec struct {
			Pool string `json:"pool"`
		}
		if raw := n.Annotations[key]; raw != "" && json.Unmarshal([]byte(raw), &rec) == nil && rec.Pool != "" {
			return rec.Pool
		}
	}
	return n.Labels[c.PoolLabel]
}

// madeUnavailable reports whether kmaint holds the node out of service.
func madeUnavailable(n *corev1.Node) bool {
	for _, key := range []string{protocol.Admitted, protocol.RebootApproved, protocol.Settling} {
		if _, ok := n.Annotations[key]; ok {
			return true
		}
	}
	return false
}

// downOfItsOwn reports whether the node is unavailable for a reason other
// than kmaint's hold: NotReady, or cordoned by someone else.
func downOfItsOwn(n *corev1.Node) bool {
	if madeUnavailable(n) {
		return false
	}
	return n.Spec.Unschedulable || !ready(n)
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
