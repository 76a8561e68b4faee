package policy

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/enqueue"
	"github.com/kmaint/kmaint/operator/statuspatch"
)

// SetupWithManager registers the controller. Policies reconcile on spec and
// annotation changes (the alert webhook writes an annotation), when a
// NodeMaintenance that can change their decision changes, and, for a node
// condition trigger, when a Node's condition of its type changes
// (condition.go); time-driven evaluations requeue.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.written = &statuspatch.Written[*v1alpha1.RebootPolicyStatus]{}
	r.wakes = &policyWakes{}
	r.apiReader = mgr.GetAPIReader()
	return ctrl.NewControllerManagedBy(mgr).
		Named("policy").
		WithOptions(opts).
		For(&v1alpha1.RebootPolicy{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&v1alpha1.NodeMaintenance{}, r.maintenanceHandler(), builder.WithPredicates(phaseChanged())).
		Watches(&corev1.Node{}, r.nodeHandler(), builder.WithPredicates(conditionsChanged())).
		Complete(r)
}

// phaseChanged passes the NodeMaintenance changes a policy reads: one
// appearing or going, a phase change (open to done is what frees a slot
// under the cap and starts a cooldown), and one that becomes readable or
// unreadable (which lets every policy raise again, or stops them); not
// every status write of a rollout.
func phaseChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*v1alpha1.NodeMaintenance)
			n, okNew := e.ObjectNew.(*v1alpha1.NodeMaintenance)
			return !okOld || !okNew || o.Status.Phase != n.Status.Phase || (o.Unreadable() == nil) != (n.Unreadable() == nil)
		},
	}
}

// maintenanceHandler enqueues the policies a NodeMaintenance's change can
// move (policiesOf); an update maps both the old object and the new, as a
// record that becomes readable maps to every policy by its old self.
func (r *Reconciler) maintenanceHandler() handler.EventHandler {
	return enqueue.Objects(func(ctx context.Context, q enqueue.Queue, objs ...client.Object) {
		for _, obj := range objs {
			for _, req := range r.policiesOf(ctx, obj) {
				q.Add(req)
			}
		}
	})
}

// policiesOf maps a NodeMaintenance's change to the policies whose
// decision it can change: its own (its cap, open requests and outcomes);
// every policy that had candidates at its last evaluation, or has none
// written yet (an open request of another source holds a candidate back,
// and its end starts the candidate's cooldown); and every policy when the
// record cannot be read (such a record stops every policy's requests, and
// its going lets them go on). A policy with no candidates decides nothing
// from another source's request: during a rollout of thousands of nodes,
// waking every policy on every phase change of every request would
// evaluate each of them back to back, reading the whole cluster each time.
// A change that comes while the policy evaluates is noted instead
// (policyWakes.notify).
func (r *Reconciler) policiesOf(ctx context.Context, obj client.Object) []ctrl.Request {
	nm, ok := obj.(*v1alpha1.NodeMaintenance)
	if !ok {
		return nil
	}
	var list v1alpha1.RebootPolicyList
	if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list policies for a node maintenance change")
		return nil
	}
	var reqs []ctrl.Request
	for i := range list.Items {
		name := list.Items[i].Name
		if alwaysWakes(nm, name) || r.wakes.notify(name) {
			reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Name: name}})
		}
	}
	return reqs
}

// alwaysWakes tells whether a change of nm wakes the policy named policy
// whatever its candidates: nm cannot be read, or is the policy's own. The
// operator's cache watches only records not finished, so the going of a
// finished record (retention's pruning of the history, which moves nothing
// a policy decides) is not seen at all, and a record's finish is seen as
// its going.
func alwaysWakes(nm *v1alpha1.NodeMaintenance, policy string) bool {
	return nm.Unreadable() != nil || nm.Spec.Policy == policy
}

// wakeState is what another source's NodeMaintenance change does to a
// policy.
type wakeState int

const (
	// wakeAlways: the policy has candidates, or none is known (never
	// evaluated since the operator started, or its last evaluation
	// failed): a change wakes it. The zero value.
	wakeAlways wakeState = iota
	// wakeNever: the policy's last evaluation, written, found no
	// candidates. Another source's request cannot give it one: candidates
	// come from its trigger, and a request only holds one back or, ending
	// in a reboot, takes it away.
	wakeNever
	// evaluating: a change is noted, and the policy comes back soon
	// (missedChangeDelay) if the evaluation ends with candidates; one that
	// ends with none has nothing the change could move. Waking it instead would, during a
	// rollout whose requests change many times a second, start a new
	// evaluation at the end of each one, all through the rollout.
	evaluating
	// evaluatingMissed: evaluating, and a change came in.
	evaluatingMissed
)

// policyWakes holds each policy's wakeState.
type policyWakes struct {
	mu    sync.Mutex
	state map[string]wakeState
}

// notify is told of another source's change and says whether it wakes the
// policy.
func (w *policyWakes) notify(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch w.state[name] {
	case wakeNever:
		return false
	case evaluating, evaluatingMissed:
		w.state[name] = evaluatingMissed
		return false
	}
	return true
}

// start marks the policy evaluating.
func (w *policyWakes) start(name string) {
	w.set(name, evaluating)
}

// finish ends an evaluation, quiet when it was written and found no
// candidates, and says whether a change came in while it ran.
func (w *policyWakes) finish(name string, quiet bool) (missed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	missed = w.state[name] == evaluatingMissed
	if quiet {
		w.state[name] = wakeNever
	} else {
		delete(w.state, name)
	}
	return missed
}

// forget drops a policy that is gone or cannot be read.
func (w *policyWakes) forget(name string) { w.set(name, wakeAlways) }

func (w *policyWakes) set(name string, s wakeState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s == wakeAlways {
		delete(w.state, name)
		return
	}
	if w.state == nil {
		w.state = map[string]wakeState{}
	}
	w.state[name] = s
}
