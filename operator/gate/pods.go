package gate

import (
	"context"
	"time"

	"github.com/kmaint/kmaint/operator/gate/podcheck"
)

// A node's pods, the last per-node verdict before its admission, are
// listed only when the node's turn comes, that is when the plan would
// admit it (decide), and at most once per BlockingPodInterval per node
// (package podcheck says why they are not cached).

// passHeldByPods checks the pods of each node the plan admits, and reports
// whether one of them holds its node: the node then gives its turn to the
// next, and the plan is made again (decide). When none holds, the plan
// keeps only the nodes whose pods were looked at.
func (r *Reconciler) passHeldByPods(ctx context.Context, st *poolState, pass *podcheck.Pass) (again bool, wake time.Time) {
	p := &st.admission.plan
	pool := podcheck.Pool{Name: st.pool.Name, Generation: st.pool.Generation,
		Selector: st.admission.podSelector, OptOuts: st.pool.Spec.PodOptOuts, Now: st.now}
	checked := r.podChecks.ListStale(ctx, pass, pool, p.Admit)
	wakeBy := func(t time.Time) {
		if wake.IsZero() || t.Before(wake) {
			wake = t
		}
	}
	var admit []string
	for _, name := range p.Admit {
		v := st.views[st.index(name)]
		check, fresh := r.podChecks.Fresh(name, pool)
		if !fresh {
			var ok bool
			if check, ok = checked[name]; !ok {
				// Past this reconcile's Lists: its turn comes on the next
				// pass, soon.
				p.Waiting = append(p.Waiting, name)
				wakeBy(st.now.Add(time.Second))
				continue
			}
		}
		v.PodsChecked = true
		if check.OptOut != nil {
			hold := podcheck.Hold(st.pool.Spec.PodOptOuts, v.Held, check, st.now)
			if hold.Admit {
				// Held past the pool's maxHold, which says to admit.
				v.Overridden = check.OptOut
				admit = append(admit, name)
				continue
			}
			v.OptedOut, v.PodHeld, v.Overdue = hold.OptOut, true, hold.Overdue
			// Nothing tells the gate that a pod went away: it looks again
			// once the finding is stale, or when the hold runs out.
			wakeBy(check.At.Add(r.BlockingPodInterval))
			if !hold.Until.IsZero() {
				wakeBy(hold.Until)
			}
			again = true
			continue
		}
		admit = append(admit, name)
	}
	if !again {
		p.Admit = admit
	}
	return again, wake
}
