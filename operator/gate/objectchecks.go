package gate

import (
	"fmt"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/objectcheck"
)

// invalidObjectCheck returns why one of the pool's object checks, blocking
// or health, cannot be compiled (reason InvalidObjectCheck or
// ObjectCheckCostExceeded); empty when all can. The pool's Degraded
// condition says it whatever waits: a blocking check says it again, as its
// Blocked reason, only once a node's turn comes, and a health check only
// once a node settles, and the person who wrote it should hear of it now.
// Programs are compiled once per kind and text (objectcheck.Compiler), so
// this costs a map lookup per check at each reconcile.
func (r *Reconciler) invalidObjectCheck(pool *v1alpha1.MaintenancePool) (reason, msg string) {
	check := func(kind, name string, oc *v1alpha1.ObjectCheck) bool {
		if oc == nil {
			return false
		}
		err := r.ObjectChecks.Compile(oc.Objects, oc.Expression).Err()
		if err == nil {
			return false
		}
		reason = objectcheck.ReasonOf(err)
		msg = fmt.Sprintf("%s %q cannot be evaluated: %v; it holds every admission (a blocking check) or passes no settling node (a health check) until it is fixed", kind, name, err)
		return true
	}
	for _, bq := range pool.Spec.BlockingQueries {
		if check("blocking check", bq.Name, bq.ObjectCheck()) {
			return reason, msg
		}
	}
	if hc := pool.Spec.HealthChecks; hc != nil {
		for _, q := range hc.Queries {
			if check("health check", q.Name, q.ObjectCheck()) {
				return reason, msg
			}
		}
	}
	return "", ""
}
