package checker

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
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

// poolOf is the pool a node counts against: the admitting pool while it is
// admitted, else its label's.
func (c *Checker) poolOf(n *corev1.Node) string {
	if raw := n.Annotations[protocol.Admitted]; raw != "" {
		var a admission
		if json.Unmarshal([]byte(raw), &a) == nil && a.Pool != "" {
			return a.Pool
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
