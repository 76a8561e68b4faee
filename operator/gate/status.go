package gate

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/operator/api/protocol"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
)

// The pool's condition types.
const (
	// ConditionBlocked is True while requests wait and the pool admits none.
	ConditionBlocked = "Blocked"
	// ConditionDraining is True while nodes are being drained.
	ConditionDraining = "Draining"
	// ConditionDegraded is True while a node's drain failed or its reboot did
	// not happen, or the pool's spec or a node's annotations cannot be used.
	ConditionDegraded = "Degraded"
	// ConditionConflicting is True while another pool selects some of the
	// pool's nodes too.
	ConditionConflicting = "Conflicting"
)

// setStatus fills the pool's status from the reconcile's final picture.
func (r *Reconciler) setStatus(st *poolState) {
	pool := st.pool
	s := &pool.Status
	s.ObservedGeneration = pool.Generation
	s.Nodes, s.Ready, s.Updated, s.Unavailable = 0, 0, 0, 0
	s.Draining, s.Rebooting, s.Degraded, s.Conflicting = 0, 0, 0, 0
	s.MaxUnavailable = int32(st.plan.maxUnavailable)
	s.PendingRequests = int32(len(st.plan.waiting))

	var degraded, malformed, conflicting []string
	for _, v := range st.views {
		s.Nodes++
		count(&s.Ready, v.ready)
		count(&s.Updated, pool.Spec.DesiredConfig == "" || v.node.Annotations[protocol.CurrentConfig] == pool.Spec.DesiredConfig)
		count(&s.Unavailable, v.unavailable())
		count(&s.Draining, v.draining())
		count(&s.Rebooting, v.rebooting())
		count(&s.Degraded, v.degraded())
		count(&s.Conflicting, len(v.otherPools) > 0)
		if v.degraded() {
			degraded = append(degraded, degradedMessage(v))
		}
		if v.malformed != nil {
			malformed = append(malformed, v.malformed.Error())
		}
		if len(v.otherPools) > 0 {
			conflicting = append(conflicting, fmt.Sprintf("%s (also in %s)", v.node.Name, strings.Join(v.otherPools, ", ")))
		}
	}

	r.setBlocked(st)
	setDraining(st)
	setDegraded(st, degraded, malformed)
	setCondition(pool, ConditionConflicting, len(conflicting) > 0, "NodesInOtherPools", "NoConflicts",
		"Nodes selected by another pool too are never admitted: "+strings.Join(conflicting, "; "))
}

func count(n *int32, ok bool) {
	if ok {
		*n++
	}
}

func degradedMessage(v nodeView) string {
	if v.daemon != nil && v.daemon.Phase == protocol.DaemonDegraded {
		return fmt.Sprintf("%s: %s", v.node.Name, v.daemon.Message)
	}
	return fmt.Sprintf("%s: %s", v.node.Name, v.drainFailure.Message)
}

// setBlocked reports why waiting requests are not admitted, with a Warning
// event when the budget first runs out.
func (r *Reconciler) setBlocked(st *poolState) {
	pool := st.pool
	p := st.plan
	var reason, msg string
	switch {
	case st.selectorErr != nil:
		reason, msg = "InvalidSelector", st.selectorErr.Error()
	case st.windowErr != nil:
		reason, msg = "InvalidWindow", st.windowErr.Error()
	case pool.Spec.Paused:
		reason, msg = "Paused", fmt.Sprintf("The pool is paused; %d nodes waiting", len(p.waiting))
	case p.held > 0:
		reason, msg = st.block.reason, st.block.message
	case p.outsideWindow > 0 && p.outsideWindow == len(p.waiting):
		reason, msg = "OutsideWindow", outsideWindowMessage(st)
	case len(p.waiting) > 0:
		reason = "BudgetExhausted"
		msg = fmt.Sprintf("%d of %d nodes may be unavailable and %d are; waiting: %s",
			p.maxUnavailable, len(st.views), st.unavailable(), strings.Join(p.waiting, ", "))
	}
	if reason == "" {
		setCondition(pool, ConditionBlocked, false, "", "NotBlocked", "")
		return
	}
	was := meta.FindStatusCondition(pool.Status.Conditions, ConditionBlocked)
	setCondition(pool, ConditionBlocked, true, reason, "", msg)
	if reason == "BudgetExhausted" && (was == nil || was.Reason != reason) {
		r.Recorder.Eventf(pool, nil, corev1.EventTypeWarning, reason, "Admit", "%s", msg)
	}
}

// outsideWindowMessage says until when the pool's waiting nodes wait for
// windows (their pool's, or their requests' policies'), and which policies'
// windows cannot be read.
func outsideWindowMessage(st *poolState) string {
	msg := "No maintenance window is open"
	if next := st.plan.nextOpening; !next.IsZero() {
		msg = fmt.Sprintf("No maintenance window is open until %s", next.UTC().Format(time.RFC3339))
	}
	msg += fmt.Sprintf("; %d nodes waiting", len(st.plan.waiting))
	var problems []string
	for _, v := range st.views {
		for _, pr := range v.windowProblems {
			if !slices.Contains(problems, pr) {
				problems = append(problems, pr)
			}
		}
	}
	if len(problems) > 0 {
		msg += "; requests of these policies are not admitted until their windows can be read: " + strings.Join(problems, "; ")
	}
	return msg
}

func setDraining(st *poolState) {
	var parts []string
	blocked := false
	for _, v := range st.views {
		if !v.draining() {
			continue
		}
		d, stepped := st.drains[v.node.Name]
		msg := d.message
		if !stepped {
			msg = "starting"
		}
		blocked = blocked || d.blocked
		parts = append(parts, fmt.Sprintf("%s: %s", v.node.Name, msg))
	}
	reason := "Evicting"
	if blocked {
		reason = "DrainBlocked"
	}
	setCondition(st.pool, ConditionDraining, len(parts) > 0, reason, "NoDrains", strings.Join(parts, "; "))
}

func setDegraded(st *poolState, degraded, malformed []string) {
	switch {
	case st.selectorErr != nil:
		setCondition(st.pool, ConditionDegraded, true, "InvalidSelector", "", st.selectorErr.Error())
	case st.windowErr != nil:
		setCondition(st.pool, ConditionDegraded, true, "InvalidWindow", "", st.windowErr.Error())
	case len(malformed) > 0:
		setCondition(st.pool, ConditionDegraded, true, "MalformedAnnotation", "", strings.Join(malformed, "; "))
	case len(degraded) > 0:
		setCondition(st.pool, ConditionDegraded, true, "NodesDegraded", "", strings.Join(degraded, "; "))
	default:
		setCondition(st.pool, ConditionDegraded, false, "", "AsExpected", "")
	}
}

// setCondition sets a condition to True with trueReason and message, or to
// False with falseReason and no message.
func setCondition(pool *v1alpha1.MaintenancePool, condType string, status bool, trueReason, falseReason, message string) {
	c := metav1.Condition{Type: condType, Status: metav1.ConditionFalse, Reason: falseReason, ObservedGeneration: pool.Generation}
	if status {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, trueReason, truncate(message)
	}
	meta.SetStatusCondition(&pool.Status.Conditions, c)
}

// truncate keeps a message within the API's 32768-byte limit.
func truncate(s string) string {
	const max = 32000
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
