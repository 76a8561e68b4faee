package policy

import (
	"context"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/enqueue"
	"github.com/kmaint/kmaint/policies"
)

// A node condition trigger reads the Nodes of the operator's cache, which
// keeps every condition's type, status and lastTransitionTime (the
// operator's slimmer drops their heartbeats, reasons and messages). It asks
// nothing of Prometheus, so an outage there does not touch it. It is
// evaluated when a Node's condition of its type changes (nodeHandler), when
// its own requests change (as every policy), and at the moment a waiting
// candidate's `for` or cooldown ends (Selection.Next): no polling.

// evaluateCondition reads the policy's condition on every selected node.
// The candidates' clocks are the operator's own (policies.TrackHeld): the
// condition's lastTransitionTime, which whoever may write the Node's status
// writes, never shortens the hold. A request raised for a candidate is
// named after its clock's start (requestName), so a condition that flaps
// while its node's request is open raises nothing more (the node has an
// open request, decide), and one still set after the reboot starts again
// at the reboot, held back by the cooldown.
func evaluateCondition(s spec, f *facts, prev []policies.Candidate, now time.Time) evaluation {
	held := map[string]time.Time{}
	var nodes []string
	for i := range f.nodes {
		n := &f.nodes[i]
		if !f.selected[n.Name] {
			continue
		}
		if transition, ok := s.condition.Held(n); ok {
			held[n.Name] = transition
			nodes = append(nodes, n.Name)
		}
	}
	return evaluation{ran: true, at: now, candidates: policies.TrackHeld(prev, held, f.lastReboots(nodes, now), now)}
}

// conditionsChanged passes the Node updates a node condition policy can
// read: a change of a condition's type, status or lastTransitionTime, or of
// the node's labels (which select it). A kubelet's or node-problem-
// detector's heartbeat, which rewrites every condition's
// lastHeartbeatTime every few seconds to minutes on every node, changes
// none of them and is dropped here, before any policy is looked up.
func conditionsChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*corev1.Node)
			n, okNew := e.ObjectNew.(*corev1.Node)
			return !okOld || !okNew || !maps.Equal(o.Labels, n.Labels) || !sameConditions(o.Status.Conditions, n.Status.Conditions)
		},
	}
}

// sameConditions compares what a node condition policy reads of two lists
// of conditions, in order: a writer that reorders them wakes the policies
// once, which is cheaper than sorting every heartbeat.
func sameConditions(a, b []corev1.NodeCondition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Status != b[i].Status || !a[i].LastTransitionTime.Equal(&b[i].LastTransitionTime) {
			return false
		}
	}
	return true
}

// nodeHandler enqueues the node condition policies a Node's change can
// move (conditionWakes); a create or a delete is a change from or to
// nothing.
func (r *Reconciler) nodeHandler() handler.EventHandler {
	node := func(obj client.Object) *corev1.Node {
		n, _ := obj.(*corev1.Node)
		return n
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q enqueue.Queue) {
			r.enqueueConditionPolicies(ctx, q, nil, node(e.Object))
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q enqueue.Queue) {
			r.enqueueConditionPolicies(ctx, q, node(e.ObjectOld), node(e.ObjectNew))
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q enqueue.Queue) {
			r.enqueueConditionPolicies(ctx, q, node(e.Object), nil)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q enqueue.Queue) {
			r.enqueueConditionPolicies(ctx, q, nil, node(e.Object))
		},
	}
}

func (r *Reconciler) enqueueConditionPolicies(ctx context.Context, q enqueue.Queue, old, updated *corev1.Node) {
	if old == nil && updated == nil {
		return
	}
	var list v1alpha1.RebootPolicyList
	if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List policies for a node change")
		return
	}
	for i := range list.Items {
		if p := &list.Items[i]; conditionWakes(p, old, updated) {
			q.Add(ctrl.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
		}
	}
}

// conditionWakes says whether a Node's change from old to updated (either
// nil for a create or a delete) can move the node condition policy p: the
// node is selected before or after, and either its condition of p's type
// changed (status, lastTransitionTime, coming or going), or the node came,
// went or moved in or out of the selection while carrying that condition.
// Other policies are woken by their own triggers. A policy whose selector
// cannot be read is woken, to say so.
func conditionWakes(p *v1alpha1.RebootPolicy, old, updated *corev1.Node) bool {
	t := p.Spec.NodeCondition
	if t == nil || p.Spec.Suspend {
		return false
	}
	sel := labels.Everything()
	if p.Spec.NodeSelector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(p.Spec.NodeSelector); err != nil {
			return true
		}
	}
	typ := corev1.NodeConditionType(t.Type)
	was, wasSelected := ofType(old, typ), old != nil && sel.Matches(labels.Set(old.Labels))
	is, isSelected := ofType(updated, typ), updated != nil && sel.Matches(labels.Set(updated.Labels))
	switch {
	case !wasSelected && !isSelected:
		return false
	case wasSelected != isSelected:
		return len(was) > 0 || len(is) > 0
	}
	return !sameConditions(was, is)
}

// ofType returns the node's conditions of type typ (one, unless its writer
// erred); none for no node.
func ofType(n *corev1.Node, typ corev1.NodeConditionType) []corev1.NodeCondition {
	if n == nil {
		return nil
	}
	var out []corev1.NodeCondition
	for _, c := range n.Status.Conditions {
		if c.Type == typ {
			out = append(out, c)
		}
	}
	return out
}
