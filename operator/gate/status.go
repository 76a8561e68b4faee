package gate

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/gate/view"
	"github.com/kmaint/kmaint/operator/poolstatus"
)

// setStatus fills the pool's status from the reconcile's final picture.
func (r *Reconciler) setStatus(ctx context.Context, st *poolState, last *v1alpha1.MaintenancePoolStatus) {
	pool := st.pool
	s := &pool.Status
	s.ObservedGeneration = pool.Generation
	s.Nodes, s.Ready, s.Updated, s.Unavailable = 0, 0, 0, 0
	s.Draining, s.Rebooting, s.Degraded, s.Conflicting, s.AtHooks = 0, 0, 0, 0, 0
	a := &st.admission
	s.MaxUnavailable = int32(a.plan.MaxUnavailable)
	s.PendingRequests = int32(a.plan.Pending())
	// What the decision found that the waiting requests quote (package
	// maintenance reads it here rather than deciding it again).
	s.BlockingQuery, s.Canaries = nil, nil
	if c := a.canaries; c != nil {
		s.Canaries = &v1alpha1.CanaryStatus{Passed: int32(c.Passed), Want: int32(c.Want)}
	}
	if a.plan.BlockedByQuery > 0 {
		// Prometheus's own words are in the message: kept within the
		// schema's bound, or the whole status write would be refused.
		s.BlockingQuery = &v1alpha1.BlockingQueryStatus{Name: a.block.Query, Reason: a.block.Reason, Message: v1alpha1.FitMessage(a.block.Message),
			LastEvaluationTime: metav1.NewTime(a.block.At)}
	}

	var degraded, malformed, notBack []string
	for _, v := range st.views {
		s.Nodes++
		count(&s.Ready, v.Ready)
		count(&s.Updated, pool.Spec.DesiredConfig == "" || v.CurrentConfig == pool.Spec.DesiredConfig)
		count(&s.Unavailable, v.UsesBudget())
		count(&s.Draining, v.Draining())
		count(&s.Rebooting, v.Rebooting())
		count(&s.Degraded, v.Degraded())
		count(&s.Conflicting, len(v.OtherPools) > 0)
		count(&s.AtHooks, v.Admission != nil && v.Hook != nil && !v.Hook.Passed())
		switch {
		case v.Unreadable != nil:
			malformed = append(malformed, v.Unreadable.Error())
		case v.NodeNotBackReported():
			notBack = append(notBack, fmt.Sprintf("%s: %s", v.Node.Name, v.NotBack.Message()))
		case v.Degraded():
			degraded = append(degraded, degradedMessage(v))
		}
	}
	// The quiet members not among the views: ordinary, or rebooting and
	// nothing else.
	q := st.quiet()
	s.Nodes += int32(q.Nodes)
	s.Ready += int32(q.Ready)
	s.Rebooting += int32(q.Rebooting)
	if pool.Spec.DesiredConfig == "" {
		s.Updated += int32(q.Nodes)
	} else {
		s.Updated += int32(q.Current)
	}
	// Its quiet members that are rebooting count too.
	s.Unavailable += int32(st.counted())

	r.setBlocked(st, last)
	setDraining(st)
	r.setDegraded(st, degraded, malformed, notBack)
	setConflicting(st)
	r.setOverBudget(ctx, st, last)
	poolstatus.Freeze(r.Recorder, st.pool, last, st.admission.freeze)
}

// setConflicting reports the pool's nodes that another pool selects too, or
// that a pool whose selector cannot be parsed might select: no pool admits
// them. The reason is InvalidSelector when only such pools cause it.
func setConflicting(st *poolState) {
	var parts []string
	realConflict := false
	for _, v := range st.views {
		if len(v.OtherPools) == 0 {
			continue
		}
		var valid, invalid []string
		for _, p := range append([]string{st.pool.Name}, v.OtherPools...) {
			if st.selection.Err(p) != nil {
				invalid = append(invalid, p)
			} else {
				valid = append(valid, p)
			}
		}
		var why []string
		if len(valid) > 1 {
			realConflict = true
			why = append(why, "selected by "+strings.Join(valid, ", "))
		}
		if len(invalid) > 0 {
			why = append(why, "might be selected by "+strings.Join(invalid, ", ")+", whose nodeSelector cannot be parsed")
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", v.Node.Name, strings.Join(why, "; ")))
	}
	reason := v1alpha1.InvalidSelectorReason
	if realConflict {
		reason = v1alpha1.NodesInOtherPoolsReason
	}
	poolstatus.SetCondition(st.pool, v1alpha1.ConflictingCondition, len(parts) > 0, reason, v1alpha1.NoConflictsReason,
		"Nodes that more than one pool selects, or might select, are never admitted: "+strings.Join(parts, "; "))
}

func count(n *int32, ok bool) {
	if ok {
		*n++
	}
}

func degradedMessage(v *view.Node) string {
	switch {
	case v.DaemonDegraded():
		return fmt.Sprintf("%s: %s", v.Node.Name, v.Daemon.Message)
	case v.DaemonMissing():
		return fmt.Sprintf("%s: %s", v.Node.Name, v.Unconfirmed.Message())
	}
	return fmt.Sprintf("%s: %s", v.Node.Name, v.DrainFailure.Message)
}

// setBlocked reports why waiting requests are not admitted, as the
// admission decision found (blockedBy), with a Warning event when the
// budget first runs out, or a pool that cannot be read first holds this
// one.
func (r *Reconciler) setBlocked(st *poolState, last *v1alpha1.MaintenancePoolStatus) {
	pool := st.pool
	in := st.waitInput()
	setOptedOut(st, &in)
	reason, msg, blocked := st.blockedBy(in)
	if !blocked {
		poolstatus.SetCondition(pool, v1alpha1.BlockedCondition, false, "", v1alpha1.NotBlockedReason, "")
		return
	}
	// The reason is copied before the condition is set: the condition
	// found is the one setCondition changes in place.
	wasReason := ""
	if was := meta.FindStatusCondition(last.Conditions, v1alpha1.BlockedCondition); was != nil && was.Status == metav1.ConditionTrue {
		wasReason = was.Reason
	}
	poolstatus.SetCondition(pool, v1alpha1.BlockedCondition, true, reason, "", msg)
	warn := reason == v1alpha1.BudgetExhaustedReason || reason == v1alpha1.UnreadablePoolReason || reason == v1alpha1.UnreadableGateReason
	switch {
	case wasReason == reason:
	case warn:
		r.Recorder.Eventf(pool, nil, corev1.EventTypeWarning, reason, "Admit", "%s", msg)
	case reason == v1alpha1.ClusterPausedReason:
		r.Recorder.Eventf(pool, nil, corev1.EventTypeNormal, reason, "Admit", "%s", msg)
	}
}

func setDraining(st *poolState) {
	var parts []string
	blocked := false
	for _, v := range st.views {
		d, stepped := st.drains[v.Node.Name]
		if !v.Draining() && !v.InBackoff {
			continue
		}
		msg := d.Message
		if !stepped {
			msg = "starting"
		}
		blocked = blocked || d.Blocked
		parts = append(parts, fmt.Sprintf("%s: %s", v.Node.Name, msg))
	}
	reason := v1alpha1.EvictingReason
	if blocked {
		reason = v1alpha1.DrainBlockedReason
	}
	poolstatus.SetCondition(st.pool, v1alpha1.DrainingCondition, len(parts) > 0, reason, v1alpha1.NoDrainsReason, strings.Join(parts, "; "))
}

// setDegraded reports what needs a person, with a Warning event on each
// node whose annotations turn unreadable, once. Nodes not back from their
// reboot come first among the degraded ones: they hold the pool's rollout.
func (r *Reconciler) setDegraded(st *poolState, degraded, malformed, notBack []string) {
	pool := st.pool
	was := meta.FindStatusCondition(pool.Status.Conditions, v1alpha1.DegradedCondition)
	invalidCheck, invalidMsg := r.invalidObjectCheck(pool)
	switch {
	case st.selectorErr != nil:
		msg := st.selectorErr.Error() + "; nothing is admitted in this pool"
		if len(st.views) > 0 {
			var names []string
			for _, v := range st.views {
				names = append(names, v.Node.Name)
			}
			msg += fmt.Sprintf(", nor in any other pool the %d nodes it might select, until it can be parsed: %s", len(names), poolstatus.NameList(names))
		}
		poolstatus.SetCondition(pool, v1alpha1.DegradedCondition, true, v1alpha1.InvalidSelectorReason, "", msg)
	case st.admission.windowErr() != nil:
		poolstatus.SetCondition(pool, v1alpha1.DegradedCondition, true, v1alpha1.InvalidWindowReason, "", st.admission.windowErr().Error())
	case st.admission.podSelectorErr != nil:
		poolstatus.SetCondition(pool, v1alpha1.DegradedCondition, true, v1alpha1.InvalidBlockingPodSelectorReason, "",
			fmt.Sprintf("blockingPodSelector cannot be parsed (%v); nothing is admitted in this pool until it can", st.admission.podSelectorErr))
	case invalidCheck != "":
		poolstatus.SetCondition(pool, v1alpha1.DegradedCondition, true, invalidCheck, "", invalidMsg)
	case len(malformed) > 0:
		poolstatus.SetCondition(pool, v1alpha1.DegradedCondition, true, v1alpha1.MalformedAnnotationReason, "", strings.Join(malformed, "; "))
	case len(notBack) > 0:
		poolstatus.SetCondition(pool, v1alpha1.DegradedCondition, true, v1alpha1.NodeNotBackReason, "", strings.Join(append(notBack, degraded...), "; "))
	case len(degraded) > 0:
		poolstatus.SetCondition(pool, v1alpha1.DegradedCondition, true, v1alpha1.NodesDegradedReason, "", strings.Join(degraded, "; "))
	default:
		poolstatus.SetCondition(pool, v1alpha1.DegradedCondition, false, "", v1alpha1.AsExpectedReason, "")
	}
	for _, v := range st.views {
		if v.Unreadable == nil {
			continue
		}
		if was != nil && was.Reason == v1alpha1.MalformedAnnotationReason && strings.Contains(was.Message, v.Unreadable.Error()) {
			continue // reported already
		}
		r.events.Both(st.pool, v.Node, corev1.EventTypeWarning, v1alpha1.MalformedAnnotationReason, "Read",
			"%v; kmaint does nothing to node %s until its annotations can be read", v.Unreadable, v.Node.Name)
	}
}
