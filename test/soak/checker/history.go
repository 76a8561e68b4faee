package checker

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// The checker keeps a compact state of every version of every Node and
// pool it saw, and replays them in the order etcd made them (replay.go):
// its watches deliver each kind in that order, but one kind's changes may
// come before or after another's, and a change seen in a list after a blind
// window is known only to lie somewhere in that window.

// nodeState is what the checks need of one version of a Node.
type nodeState struct {
	name string
	// rv is the version's resourceVersion as etcd's number (0 when it is
	// not one); at is when the checker saw it.
	rv int64
	at time.Time
	// from is, for a version first seen in a list after a blind window,
	// the lowest version its change may have been made at; 0 for one seen
	// as it came.
	from    int64
	deleted bool
	// label is the node's pool label.
	label string
	// admRaw is kmaint's admission annotation, adm what the checker reads
	// of it (nil when there is none, or it cannot be read).
	admRaw string
	adm    *admission
	// approved is the boot reboot-approved names.
	approved string
	// settleRaw is kmaint's settle record, settlePool the pool it names.
	settleRaw, settlePool string
	ready, unschedulable  bool
	// cordoned is kmaint's mark that it cordoned the node.
	cordoned bool
	boot     string
}

// admission is the part of kmaint's admission annotation the checks need,
// read with a type of the checker's own.
type admission struct {
	BootID   string    `json:"bootID"`
	Requests []string  `json:"requests"`
	Pool     string    `json:"pool"`
	Time     time.Time `json:"time"`
	// View is the newest version of the Nodes the gate's view held when
	// it counted the pool for this admission, or its approval.
	View string `json:"view"`
}

// view is the version View names; 0 when it names none, which holds the
// write to every node down before it.
func (a *admission) view() int64 {
	if a == nil {
		return 0
	}
	return versionOf(a.View)
}

// id names one admission: the gate writes a new one (another time) for
// every admission, and keeps it through the approval, which only adds
// approvedAt.
func (a *admission) id() string { return a.BootID + "@" + a.Time.UTC().Format(time.RFC3339Nano) }

func readNode(n *corev1.Node, deleted bool, poolLabel string) *nodeState {
	s := &nodeState{name: n.Name, rv: versionOf(n.ResourceVersion), deleted: deleted, label: n.Labels[poolLabel],
		unschedulable: n.Spec.Unschedulable, boot: n.Status.NodeInfo.BootID}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			s.ready = c.Status == corev1.ConditionTrue
		}
	}
	if raw := n.Annotations[protocol.Admitted]; raw != "" {
		s.admRaw = raw
		var a admission
		if json.Unmarshal([]byte(raw), &a) == nil {
			s.adm = &a
		}
	}
	s.approved = n.Annotations[protocol.RebootApproved]
	_, s.cordoned = n.Annotations[protocol.Cordoned]
	if raw := n.Annotations[protocol.Settling]; raw != "" {
		s.settleRaw = raw
		var rec struct {
			Pool string `json:"pool"`
		}
		if json.Unmarshal([]byte(raw), &rec) == nil {
			s.settlePool = rec.Pool
		}
	}
	return s
}

// held reports whether kmaint holds the node out of service: admitted,
// approved or settling, as the gate counts it against the budget.
func (s *nodeState) held() bool {
	return s != nil && !s.deleted && (s.admRaw != "" || s.approved != "" || s.settleRaw != "")
}

// rebooting reports whether the node holds its slot past its drain:
// approved, or settling after its reboot.
func (s *nodeState) rebooting() bool {
	return s != nil && !s.deleted && (s.approved != "" || s.settleRaw != "")
}

// down reports whether the node is unavailable for a reason other than
// kmaint's hold: NotReady, or cordoned by someone else.
func (s *nodeState) down() bool {
	return s != nil && !s.deleted && !s.held() && (!s.ready || s.unschedulable)
}

// pool is the pool the node counts against: the pool that admitted it
// while its maintenance lasts (its admission, then its settle record, name
// it), else its label's. kmaint promises that a node in flight stays with
// the pool that admitted it, whatever its labels say meanwhile
// (api/protocol.InFlightPool).
func (s *nodeState) pool() string {
	switch {
	case s.adm != nil && s.adm.Pool != "":
		return s.adm.Pool
	case s.admRaw == "" && s.settlePool != "":
		return s.settlePool
	}
	return s.label
}

// admissionID names the node's admission; empty when it has none.
func (s *nodeState) admissionID() string {
	switch {
	case s == nil || s.deleted || s.admRaw == "":
		return ""
	case s.adm == nil:
		return s.admRaw
	}
	return s.adm.id()
}

// holdID names what holds the node: the same value before and after a
// window means it was held, by the same admission or settle record, all
// through it.
func (s *nodeState) holdID() string {
	if !s.held() {
		return ""
	}
	return s.admissionID() + "|" + s.approved + "|" + s.settleRaw
}

// poolState is one version of a pool.
type poolState struct {
	name string
	// key is the version the replay puts it at.
	key     int64
	rv      int64
	at      time.Time
	from    int64
	deleted bool
	// max is maxUnavailable: the soak's pools give numbers; a percentage
	// is not resolved here (that would be the gate's own arithmetic again)
	// and reads as no budget, so that an admission under it shows.
	max    int
	paused bool
}

func readPool(p *v1alpha1.MaintenancePool, deleted bool) *poolState {
	s := &poolState{name: p.Name, rv: versionOf(p.ResourceVersion), deleted: deleted, paused: p.Spec.Paused}
	if p.Spec.MaxUnavailable != nil {
		s.max = p.Spec.MaxUnavailable.IntValue()
	}
	return s
}

// admitBudget is how many nodes kmaint may hold in the pool for a new
// admission to be made: none while it is paused (or gone).
func (s *poolState) admitBudget() int {
	if s.deleted || s.paused {
		return 0
	}
	return s.max
}

// approveBudget is how many may be past their drain for an approval to be
// made: a pause holds admissions, not the approvals of nodes already
// drained (operator/gate/plan: Approvable).
func (s *poolState) approveBudget() int {
	if s.deleted {
		return 0
	}
	return s.max
}

// relist is one list of Nodes made after a blind window: what it shows
// changed somewhere in the window, in an order the checker cannot tell.
type relist struct {
	// from is the lowest version a change it shows may have been made
	// at, rv the list's own.
	from, rv int64
	at       time.Time
	nodes    []*nodeState
}

// event is one entry of the history, in the order it is replayed: by key
// (etcd's version, or the order seen where there is none), then seq.
type event struct {
	key, seq int64
	node     *nodeState
	pool     *poolState
	relist   *relist
}

// eventLog holds the events and the times each version was seen.
type eventLog struct {
	events []event
	seq    int64
	// last is the highest key given so far: a version without a number
	// (a test's) comes after it.
	last  int64
	clock clock
}

// add appends an event at version rv (0: after everything so far).
func (h *eventLog) add(rv int64, at time.Time, e event) {
	if rv <= 0 {
		rv = h.last + 1
	}
	h.last = max(h.last, rv)
	h.seq++
	e.key, e.seq = rv, h.seq
	if e.pool != nil {
		e.pool.key = rv
	}
	h.events = append(h.events, e)
	h.clock.saw(rv, at)
}

// sorted returns the events in replay order.
func (h *eventLog) sorted() []event {
	out := slices.Clone(h.events)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].key != out[j].key {
			return out[i].key < out[j].key
		}
		return out[i].seq < out[j].seq
	})
	return out
}

// clock tells when etcd made a version, as near as the checker can say:
// no later than the first moment it saw that version or any later one,
// of any kind. With Nodes changing every moment, that is within the
// watches' delivery of the real time, whichever kind's watch was behind.
type clock struct {
	samples []sample
	// sorted are the samples by version, with the earliest time seen of
	// each version or a later one (suffix minima); rebuilt when stale.
	sorted []sample
}

type sample struct {
	rv int64
	at time.Time
}

func (c *clock) saw(rv int64, at time.Time) {
	c.samples = append(c.samples, sample{rv, at})
	c.sorted = nil
}

// made returns when version rv was made, at the latest.
func (c *clock) made(rv int64) time.Time {
	if c.sorted == nil {
		c.sorted = slices.Clone(c.samples)
		slices.SortStableFunc(c.sorted, func(a, b sample) int {
			switch {
			case a.rv < b.rv:
				return -1
			case a.rv > b.rv:
				return 1
			}
			return 0
		})
		for i := len(c.sorted) - 2; i >= 0; i-- {
			if c.sorted[i+1].at.Before(c.sorted[i].at) {
				c.sorted[i].at = c.sorted[i+1].at
			}
		}
	}
	i := sort.Search(len(c.sorted), func(i int) bool { return c.sorted[i].rv >= rv })
	if i == len(c.sorted) {
		return time.Time{}
	}
	return c.sorted[i].at
}

// versionOf reads a resourceVersion as etcd's number, 0 when it is not one.
func versionOf(rv string) int64 {
	v, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return 0
	}
	return v
}
