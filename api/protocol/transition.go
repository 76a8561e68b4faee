package protocol

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// A Transition is one step the operator takes on a Node: it sets and clears
// exactly the annotations (and the cordon, labels and taints) of that step,
// on a copy the caller then patches. Every node write of the operator is
// one of the transitions below, so that what a step writes is said once,
// next to what Read makes of it; doc.go has the table.
type Transition func(*corev1.Node)

// Apply runs t on node, giving it annotations first if it has none.
func (t Transition) Apply(node *corev1.Node) {
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	t(node)
}

// SetDesiredConfig writes the config identity the node's pool wants; an
// empty one removes it.
func SetDesiredConfig(config string) Transition {
	return func(n *corev1.Node) {
		if config == "" {
			delete(n.Annotations, DesiredConfig)
			return
		}
		n.Annotations[DesiredConfig] = config
	}
}

// OfferAPIRequests names the node's NodeMaintenances that start in the API
// for its daemon to journal, or to keep.
func OfferAPIRequests(reqs []APIRequest) Transition {
	return func(n *corev1.Node) { n.Annotations[APIRequests] = Encode(reqs) }
}

// HoldAdmission writes what held the node's admission when its turn came;
// nil removes it.
func HoldAdmission(held *Held) Transition {
	return func(n *corev1.Node) {
		if held == nil {
			delete(n.Annotations, AdmissionHeld)
			return
		}
		n.Annotations[AdmissionHeld] = Encode(held)
	}
}

// Admit records the admission and cordons the node in the same write, so
// that no crash leaves an admitted node schedulable; the note of what held
// its admission goes.
func Admit(a Admission) Transition {
	return func(n *corev1.Node) {
		n.Annotations[Admitted] = Encode(a)
		delete(n.Annotations, AdmissionHeld)
		cordon(n)
	}
}

// Recordon puts kmaint's cordon back on an admitted node someone
// uncordoned; a node cordoned already is left as it is.
func Recordon() Transition { return cordon }

// Redrain puts kmaint's cordon back on a node someone uncordoned while it
// waited at its beforeReboot hooks, and forgets them: pods may have landed
// on it, so it drains again and meets them again after.
func Redrain() Transition {
	return func(n *corev1.Node) {
		cordon(n)
		delete(n.Annotations, Hook)
	}
}

// Mark puts the pool's duringReboot labels and taints on the node and
// records what it added (NodeMarks), so that Release and Complete take off
// exactly those.
func Mark(m *v1alpha1.NodeMarking) Transition {
	return func(n *corev1.Node) { addMarks(n, m) }
}

// Approve approves the reboot of the admitted boot, and records when in the
// admission: the node's return is timed from it. A drain that finished
// (forced false) removes an earlier forced drain's record; a forced one
// keeps its own.
func Approve(a Admission, at time.Time, forced bool) Transition {
	a.ApprovedAt = at
	return func(n *corev1.Node) {
		n.Annotations[RebootApproved] = a.BootID
		n.Annotations[Admitted] = Encode(a)
		if !forced {
			delete(n.Annotations, DrainForced)
		}
	}
}

// RecordForcing writes what a forced drain deleted, as it deletes it.
func RecordForcing(f DrainForcing) Transition {
	return func(n *corev1.Node) { n.Annotations[DrainForced] = Encode(f) }
}

// Release lets an admitted node go before its approval: the admission and
// its slot go, and the node is back in service (uncordoned and unmarked
// where kmaint did those). Its requests are left as they are: they wait
// again, or are gone already.
func Release() Transition {
	return func(n *corev1.Node) {
		delete(n.Annotations, Admitted)
		delete(n.Annotations, Hook)
		backInService(n)
	}
}

// Retry releases a node whose drain timed out and records when its next
// attempt may start.
func Retry(r DrainRetrying) Transition {
	return func(n *corev1.Node) {
		Release()(n)
		n.Annotations[DrainRetry] = Encode(r)
	}
}

// Abandon releases a node whose drain is given up and records the failure,
// which keeps the same requests from being admitted again.
func Abandon(f DrainFailure) Transition {
	return func(n *corev1.Node) {
		Release()(n)
		delete(n.Annotations, DrainRetry)
		n.Annotations[DrainFailed] = Encode(f)
	}
}

// Complete ends an approved reboot that happened: the approval, the
// admission and every record of this reboot's drain and wait go, the node
// is back in service with the pool's afterReboot labels, and, when settle
// is not nil, keeps its slot while it settles (written in the same patch,
// so that no crash frees the slot of a node that was to settle).
func Complete(after *v1alpha1.NodeMarking, settle *Settle) Transition {
	return func(n *corev1.Node) {
		CompleteWithoutDaemon(after, settle)(n)
		delete(n.Annotations, RebootUnconfirmed)
	}
}

// CompleteWithoutDaemon is Complete for a node whose daemon never
// confirmed the reboot: RebootUnconfirmed stays, so that the node, its pool
// and its NodeMaintenance say the daemon is missing until it is back.
func CompleteWithoutDaemon(after *v1alpha1.NodeMarking, settle *Settle) Transition {
	return func(n *corev1.Node) {
		for _, key := range []string{RebootApproved, Admitted, DrainFailed, NodeNotBack, DrainRetry, Hook} {
			delete(n.Annotations, key)
		}
		backInService(n)
		addAfterLabels(n, after)
		if settle != nil {
			n.Annotations[Settling] = Encode(settle)
		}
	}
}

// AwaitDaemon records since when the node has been back from its approved
// reboot without its daemon's confirmation, which bounds the wait for it.
func AwaitDaemon(u UnconfirmedReboot) Transition {
	return func(n *corev1.Node) { n.Annotations[RebootUnconfirmed] = Encode(u) }
}

// ForgetUnconfirmed removes RebootUnconfirmed once the daemon is back.
func ForgetUnconfirmed() Transition {
	return func(n *corev1.Node) { delete(n.Annotations, RebootUnconfirmed) }
}

// TimeReturn records when the return of a node approved before admissions
// carried ApprovedAt is timed from: when the gate first sees it.
func TimeReturn(a Admission, from time.Time) Transition {
	a.ApprovedAt = from
	return func(n *corev1.Node) { n.Annotations[Admitted] = Encode(a) }
}

// MarkNotBack reports the node not back from its approved reboot within
// the operator's bound.
func MarkNotBack(b NotBack) Transition {
	return func(n *corev1.Node) { n.Annotations[NodeNotBack] = Encode(b) }
}

// ForgetNotBack removes NodeNotBack once it stands for nothing.
func ForgetNotBack() Transition {
	return func(n *corev1.Node) { delete(n.Annotations, NodeNotBack) }
}

// UpdateSettle writes where a settling node stands: its settle time
// started again, or a health check failed or recovered.
func UpdateSettle(s Settle) Transition {
	return func(n *corev1.Node) { n.Annotations[Settling] = Encode(s) }
}

// Settled frees the slot a node kept while it settled: it passed, or a
// person resumed its pool.
func Settled() Transition {
	return func(n *corev1.Node) { delete(n.Annotations, Settling) }
}

// RecordHooks writes where the node stands in the hooks of a point of its
// admission, before the gate waits for them or starts them.
func RecordHooks(rec HookRecord) Transition {
	return func(n *corev1.Node) { n.Annotations[Hook] = Encode(rec) }
}

// ForgetHooks removes the hooks' record once no point waits on them.
func ForgetHooks() Transition {
	return func(n *corev1.Node) { delete(n.Annotations, Hook) }
}

// WriteHooks is RecordHooks of rec, or ForgetHooks when rec is nil: what
// a hook runner asks to write (operator/hooks Runner.Run).
func WriteHooks(rec *HookRecord) Transition {
	if rec == nil {
		return ForgetHooks()
	}
	return RecordHooks(*rec)
}

func cordon(n *corev1.Node) {
	if !n.Spec.Unschedulable {
		n.Spec.Unschedulable = true
		n.Annotations[Cordoned] = "true"
	}
}

// backInService lifts the cordon only when kmaint put it there, and takes
// off the labels and taints kmaint put on the node for its reboot.
func backInService(n *corev1.Node) {
	if n.Annotations[Cordoned] == "true" {
		n.Spec.Unschedulable = false
		delete(n.Annotations, Cordoned)
	}
	removeMarks(n)
	forgetAcknowledgements(n)
}

// forgetAcknowledgements removes the hooks' acknowledgements: each was for
// the admission that ends, and opens nothing after it.
func forgetAcknowledgements(n *corev1.Node) {
	for key := range n.Annotations {
		if strings.HasPrefix(key, AckPrefix) {
			delete(n.Annotations, key)
		}
	}
}
