package gate

import (
	"github.com/kmaint/kmaint/internal/pools"
)

// pass makes the pool's views ready for this reconcile's phases (members):
// the active members', with what changes with time worked out again; the
// ordinary members the gate admitted that its cache
// does not show admitted yet; and, where windows or freezes apply, every
// ordinary member that waits, each of which has a verdict of its own. The
// plan pulls the other ordinary members it reads, head of the queue first.
func (r *Reconciler) pass(st *poolState, m *members, wins *pools.Windows) {
	m.pass++
	// Without windows or freezes anywhere, or with the pool's unreadable
	// (nothing is admitted then), the defaults stand.
	timeless := wins.PoolErr() != nil || wins.Timeless()
	anyInflight := r.inflight.any()
	st.members, st.quiet = m, m.tally
	st.prepare = func(k *keptView) *nodeView {
		// The views are the kept ones, not copies: at thousands of nodes a
		// copy of each was most of a reconcile's allocations. What the
		// phases find of a node in one reconcile starts afresh here
		// (startPass).
		v := &k.view
		v.startPass()
		v.pass = m.pass
		v.inflight = anyInflight && r.inflight.pending(v.Node.Name, v.Node.ResourceVersion, v.Admission != nil, st.now)
		v.backingOff = v.BackingOff(st.now)
		if cur := v.Current(); cur != nil {
			if v.queueMoves {
				v.queuedAt = pools.QueueTime(cur.Requests, k.settings, st.now)
			}
			if !timeless {
				ww := wins.Node(k.requests, k.settings)
				v.windowOpen, v.nextOpening, v.windowProblems = !ww.Shut, ww.Next, ww.Problems
				v.frozen, v.freezeProblems = ww.Frozen, ww.FreezeProblems
			}
		}
		return v
	}
	st.views = make([]*nodeView, 0, len(m.active)+8)
	for _, k := range m.active {
		st.views = append(st.views, st.prepare(k))
	}
	if anyInflight {
		for _, name := range r.inflight.names() {
			if k, ok := m.byName[name]; ok && k.quiet && !k.view.Rebooting() {
				st.pull(k)
			}
		}
	}
	st.queue = &ordinaryQueue{queue: m.queue, pull: st.pull, pulled: func() []*nodeView { return st.pulled }, pass: m.pass, counted: timeless}
	if !timeless {
		for _, k := range m.queue {
			st.pull(k)
		}
	}
}

// pull makes an ordinary member's view ready for the phases, once per
// pass, and puts it among the views: the status then counts it there, not
// in the tally.
func (st *poolState) pull(k *keptView) *nodeView {
	v := &k.view
	if v.pass == st.members.pass {
		return v
	}
	st.prepare(k)
	st.quiet.add(k, -1)
	st.views = append(st.views, v)
	st.pulled = append(st.pulled, v)
	return v
}

// counted is how many nodes count against the pool's budget that are not
// among its views: its quiet members that are rebooting.
func (st *poolState) counted() int { return st.quiet.rebooting }

// memberCount is how many nodes the pool selects.
func (st *poolState) memberCount() int { return len(st.views) + st.quiet.nodes }
