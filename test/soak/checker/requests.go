package checker

import (
	"strings"
	"time"
	"unicode"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Ending is how a request ended.
type Ending string

// How a request ends: by its own end only, its record's or a reboot kmaint
// approved naming it.
const (
	// CarriedOut: a reboot kmaint approved named it (in the admission of
	// the boot the node's daemon rebooted from).
	CarriedOut Ending = "carriedOut"
	// Overtaken: its record succeeded on another reboot, one that did not
	// name it: a reboot by hand, or one kmaint admitted before it was
	// raised. The record says the node rebooted after it was asked for.
	Overtaken Ending = "overtaken"
	// Unrecorded: it has no record because its node rebooted before
	// kmaint recorded it: the node began a reboot after it (or came back
	// after it from one), which ended what asked: the boot its journal
	// entry was of, the sentinel, the alert, the fragmented memory. A
	// cron schedule's fire is not ended by a reboot: it is unrecorded
	// only where the node had another request open between the fire and
	// the reboot (a policy asks for no node that has one). An API request
	// is the soak's own record, never unrecorded.
	Unrecorded Ending = "unrecorded"
	// Refused: its record failed (a duplicate, cancelled, a drain given
	// up), saying why.
	Refused Ending = "refused"
	// Open: not ended yet.
	Open Ending = "open"
)

// Ends counts how the soak's requests ended, by source, and those of
// config rollouts from their records.
func (c *Checker) Ends() map[string]map[Ending]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.ends()
	out := map[string]map[Ending]int{}
	add := func(source v1alpha1.Source, end Ending) {
		if out[string(source)] == nil {
			out[string(source)] = map[Ending]int{}
		}
		out[string(source)][end]++
	}
	for _, q := range c.soak {
		end, _ := e.of(q)
		add(q.Source, end)
	}
	for _, r := range c.records {
		if r.nm != nil && r.nm.Spec.Source == v1alpha1.SourceConfig {
			add(v1alpha1.SourceConfig, e.recordEnd(r))
		}
	}
	return out
}

// Unmet counts the requests the soak made that have not ended by their own
// end yet: a policy's request comes some seconds after its trigger.
func (c *Checker) Unmet() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.ends()
	n := 0
	for _, q := range c.soak {
		if end, _ := e.of(q); end == Open {
			n++
		}
	}
	return n
}

// ends tells how requests ended, from the checker's records, the requests
// the daemons raised and the reboots, each by node.
type ends struct {
	c *Checker
	// carried are the ids of the requests a reboot kmaint approved named.
	carried map[string]bool
	records map[string][]*record
	raised  map[string][]string
	reboots map[string][]Reboot
}

func (c *Checker) ends() *ends {
	e := &ends{c: c, carried: map[string]bool{}, records: map[string][]*record{}, raised: map[string][]string{}, reboots: map[string][]Reboot{}}
	for _, r := range c.reboots {
		if r.Again {
			continue
		}
		e.reboots[r.Node] = append(e.reboots[r.Node], r)
		if r.ByDaemon {
			for _, id := range c.approvals[nodeBoot{r.Node, r.From}].requests {
				e.carried[id] = true
			}
		}
	}
	for _, r := range c.records {
		if r.nm != nil {
			e.records[r.nm.Spec.NodeName] = append(e.records[r.nm.Spec.NodeName], r)
		}
	}
	for id, q := range c.requests {
		e.raised[q.node] = append(e.raised[q.node], id)
	}
	return e
}

// of tells how a request the soak made ended, and its record.
func (e *ends) of(q Request) (Ending, *record) {
	if r := e.recordOf(q); r != nil {
		return e.recordEnd(r), r
	}
	if id := e.idOf(q); id != "" && e.carried[id] {
		return CarriedOut, nil
	}
	switch {
	case q.Source == v1alpha1.SourceAPI, !e.rebootedAfter(q.Node, q.At):
	case q.Source != v1alpha1.SourceSchedule, e.otherOpen(q):
		return Unrecorded, nil
	}
	return Open, nil
}

func (e *ends) recordEnd(r *record) Ending {
	switch {
	case r.ended.IsZero():
		return Open
	case r.nm.Status.Phase == v1alpha1.PhaseFailed:
		return Refused
	case e.carried[r.nm.RequestID()]:
		return CarriedOut
	}
	return Overtaken
}

// otherOpen reports whether another record of the request's node was open
// at some moment from the request to the node's next reboot, or the
// checker was blind to records then.
func (e *ends) otherOpen(q Request) bool {
	until := e.rebootBegun(q.Node, q.At)
	if until.IsZero() {
		until = e.c.Now()
	}
	for _, w := range e.c.windows {
		if w.Kind == "nodemaintenances" && !w.To.Before(q.At) && !w.From.After(until) {
			return true
		}
	}
	for _, r := range e.records[q.Node] {
		if !r.first.After(until) && (r.ended.IsZero() || !r.ended.Before(q.At)) {
			return true
		}
	}
	return false
}

// recordOf finds the record of a request the soak made: by its tag, or,
// for a request nothing of kmaint's names (an alert, a fragmented memory,
// a sentinel whose reason left its package out), the first record of its
// source on its node open when it was made or made after it, before the
// node's next reboot.
func (e *ends) recordOf(q Request) *record {
	if q.Tag != "" {
		if r := e.c.records[q.Tag]; r != nil && r.nm != nil && r.nm.Spec.NodeName == q.Node {
			return r
		}
		id := e.idOf(q)
		for _, r := range e.records[q.Node] {
			if r.nm.Spec.Policy == q.Tag || hasTag(r.nm.Spec.Reason, q.Tag) || id != "" && r.nm.RequestID() == id {
				return r
			}
		}
		if q.Source != v1alpha1.SourceSentinel {
			return nil
		}
	}
	next := e.rebootBegun(q.Node, q.At)
	var found *record
	for _, r := range e.records[q.Node] {
		if r.nm.Spec.Source != q.Source {
			continue
		}
		openThen := !r.first.After(q.At) && (r.ended.IsZero() || r.ended.After(q.At))
		madeAfter := r.first.After(q.At) && (next.IsZero() || r.first.Before(next))
		if (openThen || madeAfter) && (found == nil || r.first.Before(found.first)) {
			found = r
		}
	}
	return found
}

// idOf finds the id of a tagged request among those the daemons raised.
func (e *ends) idOf(q Request) string {
	if q.Tag == "" {
		return ""
	}
	for _, id := range e.raised[q.Node] {
		if hasTag(e.c.requests[id].reason, q.Tag) {
			return id
		}
	}
	return ""
}

// hasTag reports whether s holds tag as a whole: soak-5 is not in soak-50.
func hasTag(s, tag string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], tag)
		if j < 0 {
			return false
		}
		end := i + j + len(tag)
		if end == len(s) || !unicode.IsDigit(rune(s[end])) {
			return true
		}
		i = end
	}
}

// rebootBegun is when the node next began a reboot after at; zero if it
// did not.
func (e *ends) rebootBegun(node string, at time.Time) time.Time {
	var first time.Time
	for _, r := range e.reboots[node] {
		if r.At.After(at) && (first.IsZero() || r.At.Before(first)) {
			first = r.At
		}
	}
	return first
}

// rebootedAfter reports whether the node rebooted after at, or came back
// after at from a reboot begun before it: a node seen back in a new boot
// answered whatever was asked of its old one while it was away.
func (e *ends) rebootedAfter(node string, at time.Time) bool {
	for _, r := range e.reboots[node] {
		if r.At.After(at) {
			return true
		}
		if back, ok := e.c.back[nodeBoot{node, r.To}]; ok && back.After(at) {
			return true
		}
	}
	return false
}
