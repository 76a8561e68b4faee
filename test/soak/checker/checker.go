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
	// Grace is how long a change must have stood before an admission is
	// held to it (see the package's doc).
	Grace time.Duration
	// Now is the clock events are stamped with.
	Now func() time.Time

	mu    sync.Mutex
	nodes map[string]*nodeRecord
	pools map[string]*poolRecord
	// admissions are every admission seen, by node and boot.
	admissions map[nodeBoot]admission
	// approved are the boots reboot-approved named, by node and boot.
	approved map[nodeBoot]bool
	reboots  []Reboot
	// back is when each node was first seen Ready in each boot.
	back     map[nodeBoot]time.Time
	requests []Request
	records  map[string]*record
	broken   []Violation
	// windows are the times a kind was not seen change by change.
	windows []Window
	// pending are admissions not yet held to their pool's budget.
	pending []pendingAdmission
	// checked counts what each invariant was checked against.
	checked map[string]int
}

// nodeBoot names one boot of one node.
type nodeBoot struct{ node, boot string }

// admission is the part of kmaint's admission annotation the checks need,
// read with a type of the checker's own.
type admission struct {
	BootID   string   `json:"bootID"`
	Requests []string `json:"requests"`
	Pool     string   `json:"pool"`
}

type nodeRecord struct {
	node *corev1.Node
	// downSince is when the node last became unavailable for a reason of
	// its own (NotReady, cordoned without kmaint's admission); zero while
	// it is available.
	downSince time.Time
}

type poolRecord struct {
	// budgets are the pool's maxUnavailable over time, newest last; a
	// paused pool's is recorded as 0.
	budgets []budgetAt
}

type budgetAt struct {
	at time.Time
	// version is the pool's resourceVersion as a number (0 when it is
	// not one): one etcd numbers every kind's changes in the order it
	// made them, so a pool's change and a node's can be put in order
	// however late either's watch delivered it.
	version int64
	budget  int
}

// pendingAdmission is an admission as the node's watch showed it, held to
// the budget once the pools' watch has caught up with it (settle).
type pendingAdmission struct {
	at      time.Time
	version int64
	node    string
	pool    string
	made    []string
	down    []string
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
	// Again is a daemon's second ask in one boot.
	Again bool
}

// Request is one request the soak made: Tag is in its reason (host
// requests) or its name (NodeMaintenances the soak created). A request with
// no tag (a metric a policy is to act on) is met by any reboot of its node
// after it.
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
func New(poolLabel string, grace time.Duration, now func() time.Time) *Checker {
	return &Checker{
		PoolLabel: poolLabel, Grace: grace, Now: now,
		nodes: map[string]*nodeRecord{}, pools: map[string]*poolRecord{},
		admissions: map[nodeBoot]admission{}, approved: map[nodeBoot]bool{}, back: map[nodeBoot]time.Time{},
		records: map[string]*record{}, checked: map[string]int{},
	}
}

// Pool records a pool as it now is.
func (c *Checker) Pool(p *v1alpha1.MaintenancePool, deleted bool) { c.pool(p, deleted, 0) }

// pool records a pool; floor, when above 0, is the lowest version its
// change may have been made at (it was listed after a blind window, and
// its own version is that of its last change, a status write as likely as
// the spec's): the change counts from there, so that an admission after it
// is held to it, never to what it replaced.
func (c *Checker) pool(p *v1alpha1.MaintenancePool, deleted bool, floor int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.Now()
	budget := 0
	if !deleted && !p.Spec.Paused && p.Spec.MaxUnavailable != nil {
		// The soak's pools give numbers; a percentage is not resolved
		// here (that would be the gate's own arithmetic again) and
		// reads as no budget, so that an admission under it shows.
		budget = p.Spec.MaxUnavailable.IntValue()
	}
	r := c.pools[p.Name]
	if r == nil {
		r = &poolRecord{}
		c.pools[p.Name] = r
	}
	version := versionOf(p.ResourceVersion)
	if floor > 0 {
		version = floor
	}
	r.budgets = append(r.budgets, budgetAt{at: now, version: version, budget: budget})
}

// Node records a node as it now is, and checks an admission it shows.
func (c *Checker) Node(n *corev1.Node, deleted bool) { c.node(n, deleted, false) }

// node records a node; relisted says it comes from a list made after a
// blind window, whose admission is recorded but not held to the budget:
// the changes of the other nodes meanwhile were not seen in their order.
func (c *Checker) node(n *corev1.Node, deleted, relisted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.Now()
	r := c.nodes[n.Name]
	if deleted {
		delete(c.nodes, n.Name)
		return
	}
	var prev *corev1.Node
	if r == nil {
		r = &nodeRecord{}
		c.nodes[n.Name] = r
	} else {
		prev = r.node
	}
	r.node = n
	if boot := (nodeBoot{n.Name, n.Status.NodeInfo.BootID}); boot.boot != "" && ready(n) {
		if _, ok := c.back[boot]; !ok {
			c.back[boot] = now
		}
	}
	switch down := downOfItsOwn(n); {
	case down && r.downSince.IsZero():
		r.downSince = now
	case !down:
		r.downSince = time.Time{}
	}
	if boot := n.Annotations[protocol.RebootApproved]; boot != "" {
		c.approved[nodeBoot{n.Name, boot}] = true
	}
	raw := n.Annotations[protocol.Admitted]
	if raw == "" || prev != nil && prev.Annotations[protocol.Admitted] == raw {
		return
	}
	var a admission
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		c.violate(now, Budget, "node %s: admission annotation %q cannot be read: %v", n.Name, raw, err)
		return
	}
	key := nodeBoot{n.Name, a.BootID}
	_, seen := c.admissions[key]
	c.admissions[key] = a
	if !seen && !relisted {
		c.checkAdmission(now, n, a)
	}
}

// Window is a time the checker did not see changes one by one.
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

// Rebooted records a reboot a node reported.
func (c *Checker) Rebooted(r Reboot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reboots = append(c.reboots, r)
}

// Requested records a request the soak made.
func (c *Checker) Requested(r Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = append(c.requests, r)
}

func (c *Checker) violate(at time.Time, invariant, format string, args ...any) {
	c.broken = append(c.broken, Violation{At: at, Invariant: invariant, Message: fmt.Sprintf(format, args...)})
}

// Violations returns what broke so far, the admissions seen so far held
// to their budgets.
func (c *Checker) Violations() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settle()
	return slices.Clone(c.broken)
}

// Final runs the checks that need the whole history, once every request
// should have ended, and returns every violation of the run.
func (c *Checker) Final() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.Now()
	c.settle()
	c.checkReboots(now)
	c.checkEnds(now)
	return slices.Clone(c.broken)
}

// Checked counts what each invariant was held to: admissions (budget),
// daemons' reboots (approval), requests rebooted (once), and records,
// requests and nodes (end). A run whose counts are small showed little.
func (c *Checker) Checked() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.checked)
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
