package checker

import (
	"sort"
	"time"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// checkReboots: every daemon's reboot approved for its boot, asked for once
// in that boot, no request rebooted in two boots, and no node rebooted
// twice by kmaint for one config.
func (c *Checker) checkReboots(now time.Time, v *verdicts) {
	bootsOf := map[string][]nodeBoot{}
	type nodeConfig struct{ node, config string }
	configs := map[nodeConfig][]time.Time{}
	for _, r := range c.reboots {
		if !r.ByDaemon {
			continue
		}
		v.checked[CheckedAsks]++
		if r.Again {
			v.violate(r.At, Once, "node %s: a daemon asked again to reboot boot %s, whose reboot was asked for and journaled already", r.Node, r.From)
			continue
		}
		key := nodeBoot{r.Node, r.From}
		a, ok := c.approvals[key]
		switch {
		case ok:
			v.checked[CheckedReboots]++
		case c.blindAt("nodes", r.At):
			// An approval written, acted on and cleared while the
			// checker was blind to Nodes is not there to be seen.
			v.excuse(ExcusedUnseenApproval, 0)
			continue
		default:
			v.checked[CheckedReboots]++
			v.violate(r.At, Approval, "node %s rebooted from boot %s, which kmaint never approved", r.Node, r.From)
			continue
		}
		for _, id := range a.requests {
			bootsOf[id] = append(bootsOf[id], key)
			if q, ok := c.requests[id]; ok && q.source == v1alpha1.SourceConfig && q.config != "" {
				k := nodeConfig{r.Node, q.config}
				configs[k] = append(configs[k], r.At)
			}
		}
	}
	v.checked[CheckedRequests] = len(bootsOf)
	ids := make([]string, 0, len(bootsOf))
	for id := range bootsOf {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if boots := bootsOf[id]; len(boots) > 1 {
			v.violate(now, Once, "request %s rebooted in %d boots: %v", id, len(boots), boots)
		}
	}
	v.checked[CheckedConfigs] = len(configs)
	for k, times := range configs {
		// A config request names its boot: each boot of a node that does
		// not run the config asks for it anew. A node rebooted for it
		// runs it after, and asks no more, unless it moved to another
		// config since (a roll back, and forward again).
		for i := 1; i < len(times); i++ {
			if !c.movedOff(k.node, k.config, times[i-1], times[i]) {
				v.violate(times[i], Once, "node %s rebooted by kmaint for config %s again (%s, then %s), not having run another since",
					k.node, k.config, times[i-1].Format(time.TimeOnly), times[i].Format(time.TimeOnly))
			}
		}
	}
}

// movedOff reports whether the node, between two reboots for a config,
// reported running it and then another.
func (c *Checker) movedOff(node, config string, from, to time.Time) bool {
	ran := false
	for _, cc := range c.configs[node] {
		if cc.at.Before(from) || cc.at.After(to) {
			continue
		}
		if cc.config == config {
			ran = true
		} else if ran {
			return true
		}
	}
	return false
}

// checkEnds: every record ended, every request the soak made ended by its
// own end, and every node back in service.
func (c *Checker) checkEnds(now time.Time, v *verdicts) {
	names := make([]string, 0, len(c.records))
	for name := range c.records {
		names = append(names, name)
	}
	sort.Strings(names)
	v.checked[CheckedEnds] = len(c.records) + len(c.soak) + len(c.nodes)
	for _, name := range names {
		r := c.records[name]
		switch {
		case r.nm == nil:
		case r.deleted && r.ended.IsZero():
			v.violate(now, End, "NodeMaintenance %s was deleted open, in phase %q", name, r.nm.Status.Phase)
		case r.ended.IsZero():
			v.violate(now, End, "NodeMaintenance %s (node %s, %s) is still %q: %s", name, r.nm.Spec.NodeName, r.nm.Spec.Source, r.nm.Status.Phase, r.nm.Status.Message)
		case r.nm.Status.Phase == v1alpha1.PhaseFailed && r.nm.Status.Message == "":
			v.violate(now, End, "NodeMaintenance %s failed without saying why", name)
		}
	}
	e := c.ends()
	for _, q := range c.soak {
		if end, rec := e.of(q); end == Open && rec == nil {
			v.violate(now, End, "the %s request %q on node %s (at %s) has no NodeMaintenance, no reboot kmaint approved named it, and the node did not reboot after it",
				q.Source, q.Tag, q.Node, q.At.Format(time.TimeOnly))
		}
	}
	nodes := make([]string, 0, len(c.nodes))
	for name := range c.nodes {
		nodes = append(nodes, name)
	}
	sort.Strings(nodes)
	for _, name := range nodes {
		n := c.nodes[name]
		var left []string
		for key, on := range map[string]bool{"cordoned": n.cordoned, "admitted": n.admRaw != "", "reboot-approved": n.approved != "", "settling": n.settleRaw != ""} {
			if on {
				left = append(left, key)
			}
		}
		if n.unschedulable {
			left = append(left, "unschedulable")
		}
		if len(left) > 0 {
			sort.Strings(left)
			v.violate(now, End, "node %s is left %v", name, left)
		}
	}
}
