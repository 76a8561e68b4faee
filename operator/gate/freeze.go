package gate

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/policies"
)

// A freeze holds requests as a closed window does: pools.Windows folds the
// pool's and the policy's freezes into each request's verdict, so a frozen
// node is not windowOpen, waits without taking budget, and the next waiting
// node that passes the freeze (ignoreFreezes) may be admitted; the gate
// wakes when the freeze ends (nextOpening). What is the freeze's own is
// here: the pool's status.freeze and Frozen condition, its FreezeStarted
// and FreezeEnded events, and the Blocked reason Frozen.

// observeFreeze records what the pool's own freezes say now, and asks for a
// reconcile when that changes: at the end of the freeze in force, or at the
// start of the next one (for its condition and event, whether or not
// requests wait).
func (st *poolState) observeFreeze(freeze policies.FreezeState) {
	st.admission.freeze = freeze
	st.wakeAt(freeze.Until)
	st.wakeAt(freeze.Next)
}

// addFreezes tells the pool's wait what freezes hold its waiting nodes, so
// that Blocked says Frozen when they are what holds them all. Most nodes
// have no freeze, and are passed over before anything else: asking each
// whether it waits, in the list of waiting nodes, was 2000 by 1900 string
// compares per reconcile in a rollout of 2000 nodes, a fifth of the gate's
// CPU.
func (st *poolState) addFreezes(in *policies.WaitInput) {
	var waiting map[string]bool
	for _, v := range st.views {
		if len(v.frozen) == 0 && len(v.freezeProblems) == 0 {
			continue
		}
		if waiting == nil {
			waiting = make(map[string]bool, len(st.admission.plan.waiting))
			for _, name := range st.admission.plan.waiting {
				waiting[name] = true
			}
		}
		if !waiting[v.Node.Name] {
			continue
		}
		for _, f := range v.frozen {
			if !slices.Contains(in.Windows.Frozen, f) {
				in.Windows.Frozen = append(in.Windows.Frozen, f)
			}
		}
		for _, f := range v.freezeProblems {
			if !slices.Contains(in.Windows.FreezeProblems, f) {
				in.Windows.FreezeProblems = append(in.Windows.FreezeProblems, f)
			}
		}
	}
}

// setFrozen writes status.freeze and the Frozen condition from the pool's
// own freezes, and sends FreezeStarted and FreezeEnded once per freeze:
// the last status written (which a restarted operator reads back from the
// pool) tells whether this one was reported already. A freeze that cannot
// be read is Frozen, reason InvalidFreeze, with a Warning event once.
func (r *Reconciler) setFrozen(st *poolState) {
	pool := st.pool
	was := pool.Status.Freeze
	if last, ok := r.written.Last(pool.Name, pool.UID); ok {
		was = last.Freeze
	}
	wasInvalid := r.lastCondition(pool, v1alpha1.FrozenCondition)
	invalidBefore := wasInvalid != nil && wasInvalid.Status == metav1.ConditionTrue && wasInvalid.Reason == v1alpha1.InvalidFreezeReason
	f := st.admission.freeze
	switch {
	case f.Err != nil:
		pool.Status.Freeze = nil
		msg := f.Describe()
		setCondition(pool, v1alpha1.FrozenCondition, true, v1alpha1.InvalidFreezeReason, "", msg)
		if !invalidBefore {
			r.Recorder.Eventf(pool, nil, corev1.EventTypeWarning, v1alpha1.InvalidFreezeReason, "Freeze", "%s", msg)
		}
		return
	case f.Frozen:
		pool.Status.Freeze = &v1alpha1.ActiveFreeze{Name: f.Freeze.Name, Reason: f.Freeze.Reason, End: metav1.NewTime(f.Until.UTC().Truncate(time.Second))}
		setCondition(pool, v1alpha1.FrozenCondition, true, v1alpha1.FrozenReason, "",
			"Nothing new is admitted but requests with ignoreFreezes: "+f.Describe())
	default:
		pool.Status.Freeze = nil
		setCondition(pool, v1alpha1.FrozenCondition, false, "", v1alpha1.NotFrozenReason, "")
	}
	now := pool.Status.Freeze
	switch {
	case now != nil && was != nil && was.Name != now.Name:
		// One freeze followed on from another.
		r.Recorder.Eventf(pool, nil, corev1.EventTypeNormal, v1alpha1.FreezeEndedReason, "Freeze",
			"Freeze %s ended; freeze %s follows on", freezeName(was), freezeName(now))
		r.Recorder.Eventf(pool, nil, corev1.EventTypeNormal, v1alpha1.FreezeStartedReason, "Freeze",
			"Freeze %s started: nothing new is admitted until %s, but requests with ignoreFreezes", freezeName(now), now.End.UTC().Format(time.RFC3339))
	case now != nil && was == nil:
		r.Recorder.Eventf(pool, nil, corev1.EventTypeNormal, v1alpha1.FreezeStartedReason, "Freeze",
			"Freeze %s started: nothing new is admitted until %s, but requests with ignoreFreezes", freezeName(now), now.End.UTC().Format(time.RFC3339))
	case now == nil && was != nil:
		r.Recorder.Eventf(pool, nil, corev1.EventTypeNormal, v1alpha1.FreezeEndedReason, "Freeze",
			"Freeze %s ended: requests are admitted again as windows and budget allow", freezeName(was))
	}
}

func freezeName(f *v1alpha1.ActiveFreeze) string {
	if f.Reason == "" {
		return f.Name
	}
	return fmt.Sprintf("%s (%s)", f.Name, f.Reason)
}
