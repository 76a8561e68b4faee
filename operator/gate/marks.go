package gate

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
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

// mark puts the pool's duringReboot marks on an admitted node before its
// drain starts, once per admission: the NodeMarks annotation says it was
// done. It reports false when the node may not be drained yet, because the
// marks were refused (the node's drainReport says why) or could not be
// written.
func (r *Reconciler) mark(ctx context.Context, st *poolState, v *nodeView) (bool, error) {
	m := st.pool.Spec.NodeMarking
	if v.Marks != nil || len(m.DuringLabels()) == 0 && len(m.DuringTaints()) == 0 {
		return true, nil
	}
	if problem := markingProblem(st); problem != "" {
		st.drains[v.Node.Name] = drainReport{blocked: true, message: problem, markingRefused: true}
		if was := meta.FindStatusCondition(st.pool.Status.Conditions, v1alpha1.DrainingCondition); was == nil || !strings.Contains(was.Message, problem) {
			r.events.Both(st.pool, v.Node, corev1.EventTypeWarning, v1alpha1.NodeMarkingRefusedReason, "Mark", "%s", problem)
		}
		return false, nil
	}
	if _, err := r.patchNode(ctx, st, v, true, protocol.Mark(m)); err != nil {
		return false, err
	}
	ctrl.LoggerFrom(ctx).Info("Node marked for its reboot", "node", v.Node.Name)
	return true, nil
}
