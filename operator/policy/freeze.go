package policy

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/policies"
)

// setFrozen tells on the policy whether its own freezes hold its requests:
// the Frozen condition is True (reason Frozen) while one is in force, True
// with reason InvalidFreeze, and a Warning event once, while one cannot be
// read, and False (NotFrozen) otherwise. The policy goes on evaluating and
// raising requests either way: the gate holds them, and their Waiting
// condition says so, until the freeze ends (or, for one that cannot be
// read, is fixed), so that nothing due is forgotten. The condition is told
// at each evaluation, and the reconcile comes back when a freeze starts or
// ends to tell it again; the requests' wait is told by the gate on time.
func (r *Reconciler) setFrozen(p *v1alpha1.RebootPolicy, st *v1alpha1.RebootPolicyStatus, out *outcome) {
	c := metav1.Condition{Type: v1alpha1.FrozenCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.NotFrozenReason, ObservedGeneration: p.Generation}
	f := out.freeze
	switch {
	case f.Err != nil:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.InvalidFreezeReason
		c.Message = v1alpha1.FitMessage(f.Describe() + "; the policy's requests are raised and wait")
		r.warnOnce(p, out.last, v1alpha1.FrozenCondition, v1alpha1.InvalidFreezeReason, c.Message)
	case f.Frozen:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.FrozenReason
		c.Message = v1alpha1.FitMessage("The policy's requests are raised and wait, unless they have ignoreFreezes: " + f.Describe())
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

// freezeOf evaluates the policy's own freezes at now; without any, it is
// not frozen and never will be.
func freezeOf(p *v1alpha1.RebootPolicy, now time.Time) policies.FreezeState {
	if len(p.Spec.Freezes) == 0 {
		return policies.FreezeState{}
	}
	return policies.EvaluateFreezes("RebootPolicy "+p.Name, p.Spec.Freezes, now)
}
