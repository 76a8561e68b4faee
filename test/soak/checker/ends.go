package checker

import (
	"sort"
	"strings"
	"time"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// checkReboots: every daemon's reboot approved for its boot, asked once, and
// no request rebooted in two boots.
func (c *Checker) checkReboots(now time.Time) {
	bootsOf := map[string][]nodeBoot{}
	c.checked[Approval] = 0
	for _, r := range c.reboots {
		key := nodeBoot{r.Node, r.From}
		if r.ByDaemon {
			c.checked[Approval]++
		}
		switch {
		case !r.ByDaemon:
			continue
		case r.Again:
			c.violate(r.At, Approval, "node %s: its daemon asked again to reboot boot %s", r.Node, r.From)
			continue
		case !c.approved[key] && !c.blindAt("nodes", r.At):
			// An approval written, acted on and cleared while the
			// checker was blind to Nodes is not there to be seen.
			c.violate(r.At, Approval, "node %s rebooted from boot %s, which kmaint never approved", r.Node, r.From)
		}
		for _, id := range c.admissions[key].Requests {
			bootsOf[id] = append(bootsOf[id], key)
		}
	}
	c.checked[Once] = len(bootsOf)
	for id, boots := range bootsOf {
		if len(boots) > 1 {
			c.violate(now, Once, "request %s rebooted in %d boots: %v", id, len(boots), boots)
		}
	}
}

// checkEnds: every record and request ended, every node back in service.
func (c *Checker) checkEnds(now time.Time) {
	names := make([]string, 0, len(c.records))
	for name := range c.records {
		names = append(names, name)
	}
	sort.Strings(names)
	c.checked[End] = len(c.records) + len(c.requests) + len(c.nodes)
	for _, name := range names {
		r := c.records[name]
		switch {
		case r.nm == nil:
		case r.deleted && r.ended.IsZero():
			c.violate(now, End, "NodeMaintenance %s was deleted open, in phase %q", name, r.nm.Status.Phase)
		case r.ended.IsZero():
			c.violate(now, End, "NodeMaintenance %s (node %s, %s) is still %q: %s", name, r.nm.Spec.NodeName, r.nm.Spec.Source, r.nm.Status.Phase, r.nm.Status.Message)
		case r.nm.Status.Phase == v1alpha1.PhaseFailed && r.nm.Status.Message == "":
			c.violate(now, End, "NodeMaintenance %s failed without saying why", name)
		}
	}
	for _, q := range c.requests {
		if r := c.recordOf(q); r != nil {
			continue // its record's end is checked above
		}
		if !c.rebootedAfter(q.Node, q.At) {
			c.violate(now, End, "the %s request %q on node %s (at %s) has no NodeMaintenance, and the node did not reboot after it",
				q.Source, q.Tag, q.Node, q.At.Format(time.TimeOnly))
		}
	}
	nodes := make([]string, 0, len(c.nodes))
	for name := range c.nodes {
		nodes = append(nodes, name)
	}
	sort.Strings(nodes)
	for _, name := range nodes {
		n := c.nodes[name].node
		var left []string
		for _, key := range []string{protocol.Cordoned, protocol.Admitted, protocol.RebootApproved, protocol.Settling} {
			if _, ok := n.Annotations[key]; ok {
				left = append(left, strings.TrimPrefix(key, protocol.Prefix))
			}
		}
		if n.Spec.Unschedulable {
			left = append(left, "unschedulable")
		}
		if len(left) > 0 {
			c.violate(now, End, "node %s is left %v", name, left)
		}
	}
}

// Unmet counts the requests the soak made that have neither a
// NodeMaintenance nor a reboot of their node after them, yet: a policy's
// request comes some seconds after its metric crossed the threshold.
func (c *Checker) Unmet() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, q := range c.requests {
		if c.recordOf(q) == nil && !c.rebootedAfter(q.Node, q.At) {
			n++
		}
	}
	return n
}

// recordOf finds the NodeMaintenance of a request the soak made.
func (c *Checker) recordOf(q Request) *record {
	if q.Tag == "" {
		return nil
	}
	if r := c.records[q.Tag]; r != nil && r.nm != nil {
		return r
	}
	for _, r := range c.records {
		if r.nm != nil && r.nm.Spec.NodeName == q.Node && strings.Contains(r.nm.Spec.Reason, q.Tag) {
			return r
		}
	}
	return nil
}

// rebootedAfter reports whether the node rebooted after at, or came back
// after at from a reboot begun before it: a node seen back in a new boot
// answered whatever was asked of its old one while it was away (an alert
// that fired, a schedule that fired), as kmaint counts a reboot done when
// the node is back.
func (c *Checker) rebootedAfter(node string, at time.Time) bool {
	for _, r := range c.reboots {
		if r.Node != node || r.Again {
			continue
		}
		if r.At.After(at) {
			return true
		}
		if back, ok := c.back[nodeBoot{node, r.To}]; ok && back.After(at) {
			return true
		}
	}
	return false
}
