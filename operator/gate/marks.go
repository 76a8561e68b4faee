package gate

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/gate/view"
)

// markingProblem says why the pool's duringReboot marks cannot be put on
// the node: the marking does not pass the API's rules (a pool stored
// before them). Empty when they can. A label that another pool's selector
// matches, or that its own no longer does, moves no node in flight: it
// stays with the pool that admitted it until its maintenance ends
// (pools.Of), and the marks come off when its reboot completes.
func markingProblem(st *poolState) string {
	if err := st.pool.Spec.NodeMarking.Check(); err != nil {
		return fmt.Sprintf("the pool's nodeMarking cannot be used: %v", err)
	}
	return ""
}

// tellMarkingRefused warns, on the node and the pool, that the pool's
// marks cannot be put on the node (problem), once: while the pool's
// Draining condition does not say so yet.
func (r *Reconciler) tellMarkingRefused(st *poolState, v *view.Node, problem string) {
	if was := meta.FindStatusCondition(st.pool.Status.Conditions, v1alpha1.DrainingCondition); was == nil || !strings.Contains(was.Message, problem) {
		r.events.Both(st.pool, v.Node, corev1.EventTypeWarning, v1alpha1.NodeMarkingRefusedReason, "Mark", "%s", problem)
	}
}
