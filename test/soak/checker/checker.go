package checker

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Checker holds a soak's history and what broke in it. Its methods may be
// called from several goroutines.
type Checker struct {
	// PoolLabel is the node label whose value names a node's pool, as
	// the soak's pools select their nodes.
	PoolLabel string
	// Now is the clock events are stamped with.
	Now func() time.Time

	mu sync.Mutex
	h  eventLog
	// nodes are the last version of each node seen.
	nodes map[string]*nodeState
	// approvals are the boots reboot-approved named, by node and boot,
	// with what the node's admission named when the checker first saw it.
	approvals map[nodeBoot]approval
	// requests are the requests the daemons raised, by id.
	requests map[string]raised
	// configs are the changes of each node's current-config, in order.
	configs  map[string][]configAt
	reboots  []Reboot
	back     map[nodeBoot]time.Time
	soak     []Request
	records  map[string]*record
	unread   map[string]bool
	broken   []Violation
	windows  []Window
	verdicts verdicts
}

// nodeBoot names one boot of one node.
type nodeBoot struct{ node, boot string }

// approval is what the checker saw of one approval.
type approval struct {
	// requests are the ids the node's admission of the approved boot
	// named; admitted is false when there was no such admission.
	requests []string
	admitted bool
}

// raised is one request a daemon raised on its node.
type raised struct {
	node   string
	source v1alpha1.Source
	reason string
	config string
}

type configAt struct {
	at     time.Time
	config string
}

// record is what the checker saw of one NodeMaintenance.
type record struct {
	nm      *v1alpha1.NodeMaintenance
	first   time.Time
	ended   time.Time
	deleted bool
}

// Reboot is one reboot of a node, as the node reported it as it began.
type Reboot struct {
	Node string
	// From is the boot the node left, To the one it comes back in.
	From, To string
	At       time.Time
	ByDaemon bool
	// Again is an ask to reboot a boot whose reboot a daemon had already
	// asked for and journaled: by the same daemon, or by one started
	// again in that boot. The daemon promises one ask per boot.
	Again bool
}

// Request is one request the soak made. Tag names it where something of
// kmaint's carries it: the reason of a host request or of a sentinel's
// record (its package), the name of a NodeMaintenance the soak created,
// the RebootPolicy of a cron schedule. Requests without one (an alert, a
// fragmented memory) are found by their node, source and time.
type Request struct {
	Node   string
	Source v1alpha1.Source
	Tag    string
	At     time.Time
}

// Violation is one broken invariant.
type Violation struct {
	At        time.Time `json:"at"`
	Invariant string    `json:"invariant"`
	Message   string    `json:"message"`
}

func (v Violation) String() string {
	return fmt.Sprintf("%s %s: %s", v.At.Format(time.TimeOnly), v.Invariant, v.Message)
}

// The invariants, as violations name them.
const (
	Budget   = "budget"
	Approval = "approval"
	Once     = "once"
	End      = "end"
)

// New returns a checker of pools whose nodes carry poolLabel.
func New(poolLabel string, now func() time.Time) *Checker {
	return &Checker{
		PoolLabel: poolLabel, Now: now,
		nodes: map[string]*nodeState{}, approvals: map[nodeBoot]approval{}, requests: map[string]raised{},
		configs: map[string][]configAt{}, back: map[nodeBoot]time.Time{}, records: map[string]*record{},
		unread: map[string]bool{},
	}
}

// Pool records a pool as it now is.
func (c *Checker) Pool(p *v1alpha1.MaintenancePool, deleted bool) { c.pool(p, deleted, nil) }

// pool records a pool; l is the list it came in after a blind window (nil
// for a change seen as it came): its change lies somewhere in the window.
func (c *Checker) pool(p *v1alpha1.MaintenancePool, deleted bool, l *listing) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := readPool(p, deleted)
	s.at = c.Now()
	if l != nil {
		if !deleted && s.rv > 0 && s.rv < l.from {
			return // unchanged since the checker last saw it
		}
		s.from = l.from
		if deleted {
			s.rv = l.rv
		}
	}
	c.h.add(s.rv, s.at, event{pool: s})
}

// listing says where a list made after a blind window stands: from is the
// lowest version a change it shows may have been made at, rv the list's.
type listing struct{ from, rv int64 }

// Node records a node as it now is.
func (c *Checker) Node(n *corev1.Node, deleted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.observe(n, deleted)
	if prev := c.nodes[s.name]; prev != nil && !deleted && s.rv > 0 && prev.rv == s.rv {
		return
	}
	c.remember(s)
	c.h.add(s.rv, s.at, event{node: s})
}

// relistNodes records the nodes a list after a blind window showed, and
// those it no longer showed (gone).
func (c *Checker) relistNodes(l listing, listed, gone []*corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := &relist{from: l.from, rv: l.rv, at: c.Now()}
	for i, n := range slices.Concat(listed, gone) {
		deleted := i >= len(listed)
		s := c.observe(n, deleted)
		if prev := c.nodes[s.name]; prev != nil && !deleted && s.rv > 0 && prev.rv == s.rv {
			continue
		}
		s.from, s.at = l.from, r.at
		if deleted {
			s.rv = l.rv
		}
		c.remember(s)
		c.h.clock.saw(s.rv, r.at)
		r.nodes = append(r.nodes, s)
	}
	c.h.add(l.rv, r.at, event{relist: r})
}

// observe reads a node and notes what the end's checks need of it: the
// boots approved, the requests raised, the config run, when it was back.
func (c *Checker) observe(n *corev1.Node, deleted bool) *nodeState {
	now := c.Now()
	s := readNode(n, deleted, c.PoolLabel)
	s.at = now
	if deleted {
		return s
	}
	if s.boot != "" && s.ready {
		if _, ok := c.back[nodeBoot{s.name, s.boot}]; !ok {
			c.back[nodeBoot{s.name, s.boot}] = now
		}
	}
	if boot := s.approved; boot != "" {
		if _, ok := c.approvals[nodeBoot{s.name, boot}]; !ok {
			a := approval{}
			if s.adm != nil && s.adm.BootID == boot {
				a.requests, a.admitted = s.adm.Requests, true
			}
			c.approvals[nodeBoot{s.name, boot}] = a
		}
	}
	if s.admRaw != "" && s.adm == nil && !c.unread[s.admRaw] {
		c.unread[s.admRaw] = true
		c.violate(now, Budget, "node %s: admission annotation %q cannot be read", s.name, s.admRaw)
	}
	var req protocol.Requested
	if raw := n.Annotations[protocol.RebootRequested]; raw != "" && json.Unmarshal([]byte(raw), &req) == nil {
		for _, r := range req.Requests {
			if _, ok := c.requests[r.ID]; !ok {
				c.requests[r.ID] = raised{node: s.name, source: r.Source, reason: r.Reason, config: r.Config}
			}
		}
	}
	if cur, ok := n.Annotations[protocol.CurrentConfig]; ok {
		seen := c.configs[s.name]
		if len(seen) == 0 || seen[len(seen)-1].config != cur {
			c.configs[s.name] = append(seen, configAt{at: now, config: cur})
		}
	}
	return s
}

func (c *Checker) remember(s *nodeState) {
	if s.deleted {
		delete(c.nodes, s.name)
		return
	}
	c.nodes[s.name] = s
}

// Window is a time the checker did not see a kind's changes one by one.
type Window struct {
	Kind     string    `json:"kind"`
	From, To time.Time `json:"-"`
	Seconds  float64   `json:"seconds"`
}

// blind records a window in which the kind's changes were not seen.
func (c *Checker) blind(kind string, from, to time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.windows = append(c.windows, Window{Kind: kind, From: from, To: to, Seconds: to.Sub(from).Seconds()})
}

// Blind returns the windows the checker did not see changes in.
func (c *Checker) Blind() []Window {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.windows)
}

// blindAt reports whether the checker was blind to the kind at t.
func (c *Checker) blindAt(kind string, t time.Time) bool {
	for _, w := range c.windows {
		if w.Kind == kind && !t.Before(w.From) && !t.After(w.To) {
			return true
		}
	}
	return false
}

// Maintenance records a NodeMaintenance as it now is.
func (c *Checker) Maintenance(nm *v1alpha1.NodeMaintenance, deleted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.Now()
	if rv := versionOf(nm.ResourceVersion); rv > 0 {
		c.h.clock.saw(rv, now)
	}
	r := c.records[nm.Name]
	if r == nil {
		r = &record{first: now}
		c.records[nm.Name] = r
	}
	if deleted {
		r.deleted = true
		return
	}
	r.nm = nm
	if r.ended.IsZero() && ended(nm) {
		r.ended = now
	}
}

func ended(nm *v1alpha1.NodeMaintenance) bool {
	return nm.Status.Phase == v1alpha1.PhaseSucceeded || nm.Status.Phase == v1alpha1.PhaseFailed
}

// Rebooted records a reboot a node reported, or a daemon's ask again.
func (c *Checker) Rebooted(r Reboot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reboots = append(c.reboots, r)
}

// Requested records a request the soak made.
func (c *Checker) Requested(r Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.soak = append(c.soak, r)
}

func (c *Checker) violate(at time.Time, invariant, format string, args ...any) {
	c.broken = append(c.broken, Violation{At: at, Invariant: invariant, Message: fmt.Sprintf(format, args...)})
}

// Violations returns what broke so far: the history so far held to the
// budgets.
func (c *Checker) Violations() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.verdicts = c.replay()
	return slices.Concat(c.broken, c.verdicts.broken)
}

// Final runs every check, the end's too, once every request should have
// ended, and returns every violation of the run.
func (c *Checker) Final() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.Now()
	v := c.replay()
	c.checkReboots(now, &v)
	c.checkEnds(now, &v)
	c.verdicts = v
	return slices.Concat(c.broken, v.broken)
}

// Checked counts what each check was held to, as of the last Violations
// or Final (see the package's doc). A run whose counts are small showed
// little.
func (c *Checker) Checked() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.verdicts.checked)
}

// Outcome is how one record ended, for a soak's results.
type Outcome struct {
	Source  v1alpha1.Source
	Phase   v1alpha1.Phase
	Seconds float64
	// Message is the record's last status message: why, when it failed.
	Message string
}

// Outcomes returns how every record the checker saw ended (Phase empty when
// it did not), and how long from its first sight to its end.
func (c *Checker) Outcomes() []Outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Outcome
	for _, r := range c.records {
		if r.nm == nil {
			continue
		}
		o := Outcome{Source: r.nm.Spec.Source, Message: r.nm.Status.Message}
		if !r.ended.IsZero() {
			o.Phase, o.Seconds = r.nm.Status.Phase, r.ended.Sub(r.first).Seconds()
		}
		out = append(out, o)
	}
	return out
}

// RebootTimes returns the reboots the nodes reported (a daemon's second
// asks left out).
func (c *Checker) RebootTimes() []Reboot {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Reboot
	for _, r := range c.reboots {
		if !r.Again {
			out = append(out, r)
		}
	}
	return out
}

// Reboots counts the reboots the nodes reported, by daemons and by hand.
func (c *Checker) Reboots() (byDaemon, byHand int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.reboots {
		switch {
		case r.Again:
		case r.ByDaemon:
			byDaemon++
		default:
			byHand++
		}
	}
	return byDaemon, byHand
}
