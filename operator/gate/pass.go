package gate

import (
	"github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/operator/gate/members"
	"github.com/kmaint/kmaint/operator/gate/plan"
	"github.com/kmaint/kmaint/operator/gate/view"
)

// member is what the gate keeps of a node of a pool between reconciles
// (package members): its kept view, and where it goes among the pool's
// members.
type member = members.Member[view.Kept]

// pass makes the pool's views ready for this reconcile's phases (package
// members): the active members', with what changes with time worked out
// again; the ordinary members the gate admitted that its cache does not
// show admitted yet; and, where windows or freezes apply, every ordinary
// member that waits, each of which has a verdict of its own. The plan
// pulls the other ordinary members it reads, head of the queue first.
func (r *Reconciler) pass(st *poolState, m *members.Pool[view.Kept], wins *pools.Windows) {
	// Without windows or freezes anywhere, or with the pool's unreadable
	// (nothing is admitted then), the defaults stand.
	windowed := !timeless(wins)
	anyInflight := r.inflight.any()
	st.views = make([]*view.Node, 0, len(m.Active())+8)
	st.members = m.Start(func(k *member) {
		// The views are the kept ones, not copies: at thousands of nodes a
		// copy of each was most of a reconcile's allocations. What the
		// phases find of a node in one reconcile starts afresh here
		// (startPass).
		v := &k.Value.View
		v.StartPass()
		v.AdmittedUnseen = anyInflight && r.inflight.pending(v.Node.Name, v.Node.ResourceVersion, v.Admission != nil, st.now)
		v.InBackoff = v.BackingOff(st.now)
		if cur := v.Current(); cur != nil {
			if v.QueueMoves {
				v.QueuedAt = pools.QueueTime(cur.Requests, k.Value.Settings, st.now)
			}
			if windowed {
				ww := wins.Node(k.Value.Requests, k.Value.Settings)
				v.WindowOpen, v.NextOpening, v.WindowProblems = !ww.Shut, ww.Next, ww.Problems
				v.Frozen, v.FreezeProblems = ww.Frozen, ww.FreezeProblems
			}
		}
		// Every member made ready is among the views: one pulled in is
		// counted there from then, not in the pass's tally.
		st.views = append(st.views, v)
	})
	if anyInflight {
		for _, name := range r.inflight.names() {
			if k := m.Get(name); k != nil && k.Place.Quiet && !k.Place.Rebooting {
				st.pull(k)
			}
		}
	}
	if windowed {
		for _, k := range m.Queue() {
			st.pull(k)
		}
	}
}

// timeless reports whether the plan may count the ordinary members past
// the budget instead of reading them: no window or freeze applies in the
// pool (or its windows cannot be read, and nothing is admitted), so each
// costs one slot and nothing of the time holds it.
func timeless(wins *pools.Windows) bool {
	return wins == nil || wins.PoolErr() != nil || wins.Timeless()
}

// pull makes an ordinary member's view ready for the phases, once per
// pass, and puts it among the views.
func (st *poolState) pull(k *member) *view.Node {
	st.members.Pull(k)
	return &k.Value.View
}

// queue is the pool's ordinary waiting members as a plan reads them; nil
// for a state without members (a test's).
func (st *poolState) queue() *plan.Queue {
	if st.members == nil {
		return nil
	}
	return plan.NewQueue(st.members, timeless(st.admission.windows))
}

// quiet counts the quiet members not among the views.
func (st *poolState) quiet() members.Tally {
	if st.members == nil {
		return members.Tally{}
	}
	return st.members.Tally()
}

// counted is how many nodes count against the pool's budget that are not
// among its views: its quiet members that are rebooting.
func (st *poolState) counted() int { return st.quiet().Rebooting }

// memberCount is how many nodes the pool selects.
func (st *poolState) memberCount() int { return len(st.views) + st.quiet().Nodes }
