package checker

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// The grace: the one slack of time the budget's checks allow, where the
// gate itself cannot know sooner. It is measured on etcd's clock as the
// checker reads it (clock): from when etcd made the change to when it made
// the admission or approval, whenever either's watch delivered it. A node
// down of its own needs none: the admission or approval records the
// version of the Nodes the gate counted from (ExcusedNodeDown).
const (
	// liveReadSpan is how long before an admission or approval a change
	// of its pool may be made and still not be known to the gate. Before
	// it writes an admission or an approval, a reconcile reads the pool
	// and the MaintenanceGate from the API server, once, and acts only if
	// its cache holds what they say (operator/gate/fresh.go); every
	// admission and approval of that reconcile is written after that one
	// read. A change made between the read and a write is one no gate can
	// know of: no write to a Node is conditional on a pool's version. The
	// span is the reconcile's own writes after the read: one patch per
	// node admitted or approved, at most twice the pool's budget (five at
	// most in the soak), each a round trip of milliseconds, tens on a
	// machine the soak loads. A second bounds it with room to spare.
	liveReadSpan = time.Second
)

// What Checked counts.
const (
	// CheckedAdmissions are admissions held to the budget: every one
	// the checker saw, the second and later of a boot and those first
	// seen in a list too.
	CheckedAdmissions = "budget-admissions"
	// CheckedApprovals are approvals held to the budget.
	CheckedApprovals = "budget-approvals"
	// CheckedStanding are the changes after which a pool's count of
	// nodes kmaint holds was held to its budget.
	CheckedStanding = "budget-standing"
	// CheckedReboots are daemons' reboots whose approval was seen.
	CheckedReboots = "approval-reboots"
	// CheckedAsks are daemons' asks to reboot held to one per boot.
	CheckedAsks = "once-asks"
	// CheckedRequests are requests held to one reboot, by id.
	CheckedRequests = "once-requests"
	// CheckedConfigs are a node's configs held to one reboot each.
	CheckedConfigs = "once-configs"
	// CheckedEnds are records, requests and nodes held to their end.
	CheckedEnds = "end"
)

// What Excused counts.
const (
	// ExcusedPoolChange: an admission or approval over a budget that its
	// pool's change, made less than liveReadSpan before it, had lowered.
	ExcusedPoolChange = "pool-change-within-live-read-span"
	// ExcusedNodeDown: one over the budget counting a node that went down
	// of its own (NotReady, or cordoned by someone else) after the view
	// the gate counted from: a version later than the one the admission
	// or approval records (protocol.Admission.View). The gate reads only
	// the pool and the MaintenanceGate live; it counts the nodes from its
	// cache, which its watch of Nodes fills a moment after etcd made each
	// change. A node down at the recorded version or before is counted,
	// however short its lag; one written with no version is held to every
	// node down before it.
	ExcusedNodeDown = "node-down-after-the-gates-view"
	// ExcusedListedDown: admissions or approvals first seen in a list
	// after a blind window, held to the nodes kmaint held at the list, in
	// a pool where nodes were down of their own: those are not counted.
	ExcusedListedDown = "listed-writes-downs-not-counted"
	// ExcusedUnseenApproval: a daemon's reboot whose approval was not
	// seen because it came and went in a blind window of Nodes.
	ExcusedUnseenApproval = "reboot-approval-in-blind-window"
	// ExcusedBlind is the prefix of the blind windows' reasons, one per
	// kind (blind-nodes, ...).
	ExcusedBlind = "blind-"
)

// Excuse is what the checker let pass for one reason: how often, how much
// time it covered (the windows' length, or the lags excused), and why.
type Excuse struct {
	Count   int     `json:"count"`
	Seconds float64 `json:"seconds"`
	Why     string  `json:"why"`
}

// excuseWhy says why the checker lets a reason pass.
func excuseWhy(reason string) string {
	switch {
	case reason == ExcusedPoolChange:
		return fmt.Sprintf("a pool's change made less than %s before an admission or approval, after the gate's one read of the pool in that reconcile", liveReadSpan)
	case reason == ExcusedNodeDown:
		return "a node down of its own at a version later than the view of Nodes the gate counted from, which its admission or approval records: no gate could have counted it"
	case reason == ExcusedListedDown:
		return "admissions or approvals first seen in a list after a blind window, in a pool where nodes were down of their own at the list: those may have come up or gone down in the window unseen, and were not counted"
	case reason == ExcusedUnseenApproval:
		return "a daemon's reboot in a blind window of Nodes: its approval came and went unseen"
	case strings.HasPrefix(reason, ExcusedBlind):
		return "the watch's version was compacted away: the kind was listed again, and its changes in the window were not seen one by one"
	}
	return ""
}

// verdicts are what one replay of the history found.
type verdicts struct {
	broken  []Violation
	checked map[string]int
	excused map[string]*Excuse
}

func (v *verdicts) violate(at time.Time, invariant, format string, args ...any) {
	v.broken = append(v.broken, Violation{At: at, Invariant: invariant, Message: fmt.Sprintf(format, args...)})
}

func (v *verdicts) excuse(reason string, lag time.Duration) {
	e := v.excused[reason]
	if e == nil {
		e = &Excuse{Why: excuseWhy(reason)}
		v.excused[reason] = e
	}
	e.Count++
	e.Seconds += lag.Seconds()
}

// Excused says what the checker let pass, by reason, as of the last
// Violations or Final: the blind windows and what they kept from being
// checked, and each time a grace decided.
func (c *Checker) Excused() map[string]Excuse {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]Excuse{}
	for reason, e := range c.verdicts.excused {
		out[reason] = *e
	}
	return out
}

// replay holds the history to the budget in the order etcd made it:
// each admission and approval against the state at its moment, and each
// pool's count after every change.
type replay struct {
	clock *clock
	nodes map[string]*nodeTrack
	// pools are each pool's versions in order, all of them: a write is
	// held to what its pool may have been at its moment, which a list
	// made later can tell.
	pools map[string][]*poolState
	// over is, for each pool whose budget was lowered below the nodes
	// kmaint held in it, the most it may hold until it is within: the
	// count may only fall.
	over map[string]int
	out  verdicts
}

// nodeTrack is a node's state as the replay stands.
type nodeTrack struct {
	cur *nodeState
	// downKey is the version from which the node has been down of its own
	// in its current pool.
	downKey int64
}

func (c *Checker) replay() verdicts {
	events := c.h.sorted()
	r := &replay{clock: &c.h.clock, nodes: map[string]*nodeTrack{}, pools: map[string][]*poolState{}, over: map[string]int{},
		out: verdicts{checked: map[string]int{}, excused: map[string]*Excuse{}}}
	for _, e := range events {
		if e.pool != nil {
			r.pools[e.pool.name] = append(r.pools[e.pool.name], e.pool)
		}
	}
	for _, e := range events {
		switch {
		case e.pool != nil:
			r.standing(e.key, e.pool.name, true)
		case e.node != nil:
			r.node(e.key, e.node)
		case e.relist != nil:
			r.relisted(e.key, e.relist)
		}
	}
	for _, w := range c.windows {
		r.out.excuse(ExcusedBlind+w.Kind, w.To.Sub(w.From))
	}
	return r.out
}

// node replays one version of a node seen as it came.
func (r *replay) node(k int64, s *nodeState) {
	t := r.track(s.name)
	prev := t.cur
	if s.admRaw != "" && s.admissionID() != prev.admissionID() {
		r.admission(k, s)
	}
	if s.approved != "" && (prev == nil || s.approved != prev.approved) {
		r.approval(k, s)
	}
	r.set(t, k, s)
	for _, p := range pools(prev, s) {
		r.standing(k, p, false)
	}
}

func (r *replay) track(name string) *nodeTrack {
	t := r.nodes[name]
	if t == nil {
		t = &nodeTrack{}
		r.nodes[name] = t
	}
	return t
}

// set makes s the node's state from version k on.
func (r *replay) set(t *nodeTrack, k int64, s *nodeState) {
	if !s.down() || !t.cur.down() || t.cur.pool() != s.pool() {
		t.downKey = k
	}
	t.cur = s
}

// pools are the pools a node's change may change the count of.
func pools(states ...*nodeState) []string {
	var out []string
	for _, s := range states {
		if s.held() && !slices.Contains(out, s.pool()) {
			out = append(out, s.pool())
		}
	}
	return out
}

// count is how many nodes kmaint holds in the pool.
func (r *replay) count(pool string) int {
	n := 0
	for _, t := range r.nodes {
		if t.cur.held() && t.cur.pool() == pool {
			n++
		}
	}
	return n
}

// others tells, of the nodes of the pool other than name, those that count
// against a write at version k made from the view of Nodes at version view
// (0: none recorded): those counted holds, and those down of their own
// since view or before (down); unseen are those that went down after it,
// and lag how long before the write the oldest of them had been.
func (r *replay) others(pool, name string, k, view int64, counted func(*nodeState) bool) (held, down, unseen []string, lag time.Duration) {
	now := r.clock.made(k)
	for other, t := range r.nodes {
		s := t.cur
		if other == name || s == nil || s.deleted || s.pool() != pool {
			continue
		}
		switch {
		case counted(s):
			held = append(held, other)
		case s.down():
			since := now.Sub(r.clock.made(t.downKey))
			if view == 0 || t.downKey <= view {
				down = append(down, fmt.Sprintf("%s (down since v%d, %.1fs)", other, t.downKey, since.Seconds()))
			} else {
				unseen = append(unseen, other)
				lag = max(lag, since)
			}
		}
	}
	sort.Strings(held)
	sort.Strings(down)
	return held, down, unseen, lag
}

// admission holds a new admission to its pool's budget: the nodes kmaint
// held in the pool, those down of their own, and the node itself, within
// the budget the pool had (none while paused). The gate admits a node that
// is down already at no cost, but only while the pool is within it.
func (r *replay) admission(k int64, s *nodeState) {
	pool := s.pool()
	held, down, unseen, downLag := r.others(pool, s.name, k, s.adm.view(), (*nodeState).held)
	r.hold(k, s, CheckedAdmissions, "admitted", pool, held, down, unseen, downLag, (*poolState).admitBudget)
}

// approval holds a new approval to its pool's budget: the nodes past
// their drain (approved, settling), those draining while NotReady, which
// the gate counts as it does the nodes down of their own, those, and the
// node itself. The nodes still draining do not count: the gate approves
// them in the order it admitted them, within the budget, and a lowered
// budget holds the later ones. A pause holds admissions, not approvals. The
// approval must name the boot the node's admission is of.
func (r *replay) approval(k int64, s *nodeState) {
	at := r.clock.made(k)
	if s.adm == nil || s.adm.BootID != s.approved {
		of := "none"
		if s.adm != nil {
			of = "boot " + s.adm.BootID
		}
		r.out.violate(at, Approval, "node %s: reboot-approved names boot %s, and its admission is of %s (v%d)", s.name, s.approved, of, s.rv)
	}
	pool := s.pool()
	past := func(o *nodeState) bool { return o.rebooting() || o.held() && !o.ready }
	held, down, unseen, downLag := r.others(pool, s.name, k, s.adm.view(), past)
	r.hold(k, s, CheckedApprovals, "approved", pool, held, down, unseen, downLag, (*poolState).approveBudget)
}

// hold checks that held, down and the node fit the budget, and tells which
// grace let it pass where one did.
func (r *replay) hold(k int64, s *nodeState, checked, what, pool string, held, down, unseen []string, downLag time.Duration, of func(*poolState) int) {
	at := r.clock.made(k)
	r.out.checked[checked]++
	b, ok := r.budgetAt(pool, k, of)
	if !ok {
		r.out.violate(at, Budget, "node %s %s in pool %q, which the checker never saw", s.name, what, pool)
		return
	}
	n := len(held) + len(down) + 1
	switch {
	case n > b.lenient:
		r.out.violate(at, Budget, "pool %s: node %s %s (v%d, from its view of Nodes at v%d) with %d counted against a budget of %d: kmaint's %v, down %v (%s)",
			pool, s.name, what, s.rv, s.adm.view(), n, b.lenient, held, down, r.budgetsBefore(pool, k))
	case n > b.strict:
		r.out.excuse(ExcusedPoolChange, b.lag)
	case n+len(unseen) > b.lenient:
		r.out.excuse(ExcusedNodeDown, downLag)
	}
}

// budget is what a pool's budget was for a write at a version: strict, the
// one in effect then; lenient, the largest the gate may have acted on: one
// replaced less than liveReadSpan before, or one a list made later shows
// replaced somewhere around then. lag is how long before the write the
// change the lenient one ignores was made.
type budget struct {
	strict, lenient int
	lag             time.Duration
}

func (r *replay) budgetAt(pool string, k int64, of func(*poolState) int) (budget, bool) {
	states := r.pools[pool]
	i := sort.Search(len(states), func(i int) bool { return states[i].key > k }) - 1
	var b budget
	known := i >= 0
	if known {
		b.strict = of(states[i])
		b.lenient = b.strict
	}
	// Changes first seen in a list after the write, made somewhere in a
	// window that may have begun before it.
	for j := i + 1; j < len(states) && states[j].from > 0 && states[j].from <= k; j++ {
		if !known {
			b.strict, b.lenient, known = of(states[j]), of(states[j]), true
			continue
		}
		b.lenient = max(b.lenient, of(states[j]))
	}
	now := r.clock.made(k)
	for ; i > 0; i-- {
		since := now.Sub(r.clock.made(states[i].key))
		if since >= liveReadSpan {
			break
		}
		if prev := of(states[i-1]); prev > b.lenient {
			b.lenient, b.lag = prev, since
		}
	}
	return b, known
}

// budgetOver is the largest budget the pool had at any moment from version
// from to version to, as a write in between may have found it.
func (r *replay) budgetOver(pool string, from, to int64, of func(*poolState) int) (int, bool) {
	best, known := -1, false
	if b, ok := r.budgetAt(pool, from, of); ok {
		best, known = b.lenient, true
	}
	if b, ok := r.budgetAt(pool, to, of); ok {
		best, known = max(best, b.lenient), true
	}
	for _, s := range r.pools[pool] {
		if s.key > from && s.key <= to {
			best, known = max(best, of(s)), true
		}
	}
	return best, known
}

// standing holds the pool's count of nodes kmaint holds to its budget
// after a change: within it, or, since a change of the pool lowered it
// below the count (or paused the pool), never above what it has fallen to.
func (r *replay) standing(k int64, pool string, poolChanged bool) {
	r.out.checked[CheckedStanding]++
	n := r.count(pool)
	b, known := r.budgetAt(pool, k, (*poolState).admitBudget)
	over, lowered := r.over[pool]
	switch {
	case !known && n > 0:
		// The admission of each of its nodes says so.
	case n <= b.strict:
		delete(r.over, pool)
	case poolChanged || lowered && n <= over:
		r.over[pool] = n
	case n <= b.lenient:
		// The admission that raised it, held to the same budget, was
		// excused.
		r.over[pool] = n
	default:
		r.out.violate(r.clock.made(k), Budget, "pool %s holds %d nodes past its budget of %d (v%d)%s (%s)",
			pool, n, b.strict, k, fallen(lowered, over), r.budgetsBefore(pool, k))
		r.over[pool] = n
	}
}

func fallen(lowered bool, over int) string {
	if !lowered {
		return ""
	}
	return fmt.Sprintf(", more than the %d it had fallen to since its budget was lowered", over)
}

// budgetsBefore describes the pool's budgets in the minute before a
// version, for a violation's message.
func (r *replay) budgetsBefore(pool string, k int64) string {
	from := r.clock.made(k).Add(-time.Minute)
	var parts []string
	for _, s := range r.pools[pool] {
		if at := r.clock.made(s.key); !at.Before(from) && s.key <= k {
			parts = append(parts, fmt.Sprintf("%d (paused %t) at %s (v%d)", s.max, s.paused, at.Format("15:04:05.000"), s.key))
		}
	}
	if len(parts) == 0 {
		return "budget unchanged in the last minute"
	}
	return "budgets made: " + strings.Join(parts, ", ")
}
