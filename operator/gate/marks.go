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

	"github.com/kmaint/kmaint/operator/api/protocol"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/pools"
)

// addMarks puts the pool's duringReboot labels and taints on the node and
// records what it added in the NodeMarks annotation. A label the node has
// with the same value, or a taint with the same key and effect, is the
// node's own and is not recorded, so it stays after the reboot; a label
// with another value is recorded with it, to be restored.
func addMarks(n *corev1.Node, m *v1alpha1.NodeMarking) {
	rec := protocol.Marks{}
	for k, val := range m.DuringLabels() {
		have, ok := n.Labels[k]
		if ok && have == string(val) {
			continue
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		ml := protocol.MarkedLabel{Value: string(val)}
		if ok {
			ml.Previous = &have
		}
		if rec.Labels == nil {
			rec.Labels = map[string]protocol.MarkedLabel{}
		}
		rec.Labels[k] = ml
		n.Labels[k] = string(val)
	}
	for _, t := range m.DuringTaints() {
		if slices.ContainsFunc(n.Spec.Taints, func(have corev1.Taint) bool {
			return have.Key == t.Key && string(have.Effect) == t.Effect
		}) {
			continue
		}
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: t.Key, Value: string(t.Value), Effect: corev1.TaintEffect(t.Effect)})
		rec.Taints = append(rec.Taints, protocol.MarkedTaint{Key: t.Key, Value: string(t.Value), Effect: t.Effect})
	}
	n.Annotations[protocol.NodeMarks] = protocol.Encode(rec)
}

// removeMarks takes off the node what the NodeMarks annotation says kmaint
// added, and the annotation. A label or taint someone changed since is
// theirs now and stays. An annotation that cannot be read never gets here:
// such a node is not completed, released or uncordoned (protocol.Read).
func removeMarks(n *corev1.Node) {
	var rec protocol.Marks
	if ok, err := protocol.Decode(n, protocol.NodeMarks, &rec); !ok || err != nil {
		return
	}
	for k, ml := range rec.Labels {
		if have, ok := n.Labels[k]; !ok || have != ml.Value {
			continue
		}
		if ml.Previous != nil {
			n.Labels[k] = *ml.Previous
		} else {
			delete(n.Labels, k)
		}
	}
	n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(have corev1.Taint) bool {
		return slices.Contains(rec.Taints, protocol.MarkedTaint{Key: have.Key, Value: have.Value, Effect: string(have.Effect)})
	})
	delete(n.Annotations, protocol.NodeMarks)
}

// addAfterLabels puts the pool's afterReboot labels on a node whose reboot
// completed. They stay: kmaint does not record or remove them.
func addAfterLabels(n *corev1.Node, m *v1alpha1.NodeMarking) {
	after := m.AfterLabels()
	if len(after) == 0 {
		return
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	for k, v := range after {
		n.Labels[k] = string(v)
	}
}

// markingProblem says why the pool's duringReboot marks cannot be put on
// the node: the marking does not pass the API's rules (a pool stored
// before them), or its labels would move the node into another pool, or
// out of this one, in the middle of its reboot. Empty when they can.
func markingProblem(st *poolState, v nodeView) string {
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
// marks were refused (st.markingRefused says why) or could not be written.
func (r *Reconciler) mark(ctx context.Context, st *poolState, v nodeView) (bool, error) {
	m := st.pool.Spec.NodeMarking
	if v.Marks != nil || len(m.DuringLabels()) == 0 && len(m.DuringTaints()) == 0 {
		return true, nil
	}
	if problem := markingProblem(st, v); problem != "" {
		st.markingRefused[v.Node.Name] = problem
		st.drains[v.Node.Name] = drainReport{blocked: true, message: problem}
		if was := meta.FindStatusCondition(st.pool.Status.Conditions, v1alpha1.DrainingCondition); was == nil || !strings.Contains(was.Message, problem) {
			r.event(st, v.Node, corev1.EventTypeWarning, v1alpha1.NodeMarkingRefusedReason, "Mark", "%s", problem)
		}
		return false, nil
	}
	if _, err := r.patchNode(ctx, st, v, true, func(n *corev1.Node) { addMarks(n, m) }); err != nil {
		return false, err
	}
	ctrl.LoggerFrom(ctx).Info("Node marked for its reboot", "node", v.Node.Name)
	return true, nil
}
