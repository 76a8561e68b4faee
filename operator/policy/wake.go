package policy

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/kmaint/kmaint/operator/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/statuspatch"
)

// SetupWithManager registers the controller. Policies reconcile on spec and
// annotation changes (the alert webhook writes an annotation), and when a
// NodeMaintenance that can change their decision changes; time-driven
// evaluations requeue.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.written = &statuspatch.Written[*v1alpha1.RebootPolicyStatus]{}
	r.quiet = &quietPolicies{}
	return ctrl.NewControllerManagedBy(mgr).
		Named("policy").
		WithOptions(opts).
		For(&v1alpha1.RebootPolicy{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&v1alpha1.NodeMaintenance{}, handler.EnqueueRequestsFromMapFunc(r.policiesOf),
			builder.WithPredicates(phaseChanged())).
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

// policiesOf maps a NodeMaintenance to the policies whose decision it can
// change: its own (its cap, open requests and outcomes); every policy that
// had candidates at its last evaluation, or has not finished one since it
// last started (an open request of another source holds a candidate back,
// and its end starts the candidate's cooldown); and every policy when the
// record cannot be read (such a record stops every policy's requests, and
// its going lets them go on). A policy with no candidates decides nothing
// from another source's request: during a rollout of thousands of nodes,
// waking every policy on every phase change of every request would
// evaluate each of them back to back, reading the whole cluster each time.
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
		if name := list.Items[i].Name; wakes(nm, name, r.quiet.has(name)) {
			reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Name: name}})
		}
	}
	return reqs
}

// wakes tells whether a change of nm can change what the policy named
// policy decides, quiet when its last evaluation found no candidates.
func wakes(nm *v1alpha1.NodeMaintenance, policy string, quiet bool) bool {
	return !quiet || nm.Unreadable() != nil || nm.Spec.Policy == policy
}

// quietPolicies are the policies whose last evaluation, written, found no
// candidates. A policy not in it is woken by any NodeMaintenance's change:
// one never evaluated (as after a restart), one being evaluated, one whose
// evaluation failed.
type quietPolicies struct {
	mu    sync.Mutex
	names map[string]bool
}

func (q *quietPolicies) set(name string, quiet bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !quiet {
		delete(q.names, name)
		return
	}
	if q.names == nil {
		q.names = map[string]bool{}
	}
	q.names[name] = true
}

func (q *quietPolicies) forget(name string) { q.set(name, false) }

func (q *quietPolicies) has(name string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.names[name]
}
