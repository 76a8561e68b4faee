package gate

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/gate/view"
	"github.com/kmaint/kmaint/operator/poolstatus"
	"github.com/kmaint/kmaint/policies"
)

// Opt-outs and the cluster-wide stop: what keeps nodes from being admitted
// although their pool has room. A node a person annotated
// (protocol.NodeOptOut) is known from the cache; what a node's pods say is
// asked when its turn comes (pods.go).

// observeOptOuts reads what keeps nodes from being admitted that the cache
// knows: the cluster's stop, the pool's blockingPodSelector, and the
// opt-outs people set on the Nodes.
func (r *Reconciler) observeOptOuts(ctx context.Context, st *poolState) error {
	g, err := r.readGate(ctx, r.Client)
	if err != nil {
		return err
	}
	st.gate, st.admission.stop = g, v1alpha1.StopOf(g) // nil for no gate
	if sel := st.pool.Spec.BlockingPodSelector; sel != nil {
		st.admission.podSelector, st.admission.podSelectorErr = sel.AsSelector()
	}
	for i := range st.views {
		v := st.views[i]
		if v.WantsAdmission() {
			v.OptedOut = v.DoNotDisrupt
		}
	}
	return nil
}

// syncHeld writes, on each node its pods hold, why (protocol.AdmissionHeld),
// so that its requests and the plugin can say so, and removes the note
// from nodes that no longer wait for their pods.
func (r *Reconciler) syncHeld(ctx context.Context, st *poolState) error {
	var errs []error
	for _, v := range st.views {
		want := heldNote(v, st.now)
		switch {
		case want == nil && !v.HeldAnnotated():
			continue
		case want == nil && !v.PodsChecked && v.WantsAdmission() && v.OptedOut == nil && v.Held != nil:
			continue // not looked at this time: the last finding stands
		case want != nil && v.Held != nil && v.Held.Reason == want.Reason && v.Held.Message == want.Message:
			continue
		}
		if _, err := r.patchNode(ctx, st, v, false, protocol.HoldAdmission(want)); err != nil {
			errs = append(errs, err)
			continue
		}
		if want != nil && want.Overdue && (v.Held == nil || !v.Held.Overdue) {
			r.events.Both(st.pool, v.Node, corev1.EventTypeWarning, v1alpha1.PodOptOutOverdueReason, "Hold", "%s", want.Message)
		}
	}
	return errors.Join(errs...)
}

// heldNote is the AdmissionHeld value a node should carry: what its pods
// said when checked this pass; nil when they hold nothing, or the node
// holds itself (its own annotation says more). Since stays from the first
// finding, whatever the pods say since: it is what the pool's
// podOptOuts.maxHold counts from, and a pod that swapped its annotation
// for a blockingPodSelector label must not start the count again.
func heldNote(v *view.Node, now time.Time) *protocol.Held {
	if !v.PodHeld || v.OptedOut == nil {
		return nil
	}
	h := &protocol.Held{Reason: v.OptedOut.Reason, Message: v1alpha1.FitMessage(v.OptedOut.Message), Since: now, Overdue: v.Overdue}
	if v.Held != nil && !v.Held.Since.IsZero() && !v.Held.Since.After(now) {
		h.Since = v.Held.Since
	}
	return h
}

// releaseOptedOut lets go of nodes a person annotated do-not-disrupt after
// they were admitted and before their reboot was approved: the drain
// stops, the node is uncordoned if kmaint cordoned it, and its requests
// wait again (they are not failed) until the annotation is removed. The
// person asked for the node to be left alone, and a node held cordoned,
// its drain half done, is what they would least want; a node already
// approved reboots as approved (its daemon may be rebooting it already),
// as a cancellation then would be refused.
func (r *Reconciler) releaseOptedOut(ctx context.Context, st *poolState) error {
	var errs []error
	for _, v := range st.views {
		o := v.DoNotDisrupt
		if o == nil || !v.Draining() || v.Unreadable != nil {
			continue
		}
		_, err := r.patchNode(ctx, st, v, true, protocol.Release())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if i := st.index(v.Node.Name); i >= 0 {
			st.views[i].OptedOut = o // not admitted again in this pass
		}
		ctrl.LoggerFrom(ctx).Info("Opted-out node released before approval", "node", v.Node.Name)
		r.events.Both(st.pool, v.Node, corev1.EventTypeNormal, v1alpha1.DoNotDisruptReason, "Release",
			"%s; it was being drained and is released before approval (uncordoned if kmaint cordoned it); its requests wait", o.Message)
	}
	return errors.Join(errs...)
}

// optedOutNodes lists the waiting nodes an opt-out holds, with why.
func (st *poolState) optedOutNodes() []string {
	var out []string
	for _, v := range st.views {
		if v.OptedOut != nil && v.Waiting() {
			out = append(out, v.OptedOut.Message)
		}
	}
	return out
}

// setOptedOut reports the pool's opted-out nodes: a count in the status and
// the OptedOut condition naming them.
func setOptedOut(st *poolState, in *policies.WaitInput) {
	nodes := st.optedOutNodes()
	st.pool.Status.OptedOut = int32(len(nodes))
	in.OptedOut = nodes
	msg := fmt.Sprintf("%d nodes wait for an opt-out to be lifted: %s", len(nodes), poolstatus.NameList(nodes))
	poolstatus.SetCondition(st.pool, v1alpha1.OptedOutCondition, len(nodes) > 0, v1alpha1.OptedOutReason, v1alpha1.NoOptOutsReason, msg)
}
