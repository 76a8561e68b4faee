package gate

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/policies"
)

// nodeHalt is the halt a node of the pool records, which holds every
// admission as the pool's; nil when none does. Aftercare decides a halt and
// reports it in the pool's Halted condition, which is what the holds read
// (package waits). A node's failed check is also written on the node
// itself (and so is a hook's failure that halts), before the condition:
// the gate may see that node before the pool's new status reaches its
// cache, and must not admit in between.
func (st *poolState) nodeHalt() *policies.Halt {
	for _, v := range st.views {
		if h := v.HaltsPool(); h != nil {
			return &policies.Halt{Reason: h.Reason, Message: h.Message()}
		}
	}
	return nil
}

// haltChanged passes a pool update whose Halted condition changes: the
// gate holds or goes on with admissions.
func haltChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*v1alpha1.MaintenancePool)
			n, okNew := e.ObjectNew.(*v1alpha1.MaintenancePool)
			return !okOld || !okNew ||
				meta.IsStatusConditionTrue(o.Status.Conditions, v1alpha1.HaltedCondition) != meta.IsStatusConditionTrue(n.Status.Conditions, v1alpha1.HaltedCondition)
		},
	}
}
