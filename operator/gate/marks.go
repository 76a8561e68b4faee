package gate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
)

// markingProblem says why the pool's duringReboot marks cannot be put on
// the node: the marking does not pass the API's rules (a pool stored
// before them), or its labels would move the node into another pool, or
// out of this one, in the middle of its reboot. Empty when they can.
func markingProblem(st *poolState, v *nodeView) string {
	m := st.pool.Spec.NodeMarking
	if err := m.Check(); err != nil {
		return fmt.Sprintf("the pool's nodeMarking cannot be used: %v", err)
	}
	labels := m.DuringLabels()
	if len(labels) == 0 {
		return ""
	}
	marked := v.Node.DeepCopy()
	if marked.Labels == nil {
		marked.Labels = map[string]string{}
	}
	for k, val := range labels {
		marked.Labels[k] = string(val)
	}
	before, after := pools.Of(v.Node, st.selection), pools.Of(marked, st.selection)
	if slices.Equal(before, after) {
		return ""
	}
	keys := slices.Sorted(maps.Keys(labels))
	return fmt.Sprintf("the pool's nodeMarking.duringReboot labels (%s) would put node %s in pools [%s] instead of [%s] in the middle of its reboot; no mark is put and its drain does not start",
		strings.Join(keys, ", "), v.Node.Name, strings.Join(after, ", "), strings.Join(before, ", "))
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
	if problem := markingProblem(st, v); problem != "" {
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
