package protocol

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// addMarks puts the pool's duringReboot labels and taints on the node and
// records what it added in the NodeMarks annotation. A label the node has
// with the same value, or a taint with the same key and effect, is the
// node's own and is not recorded, so it stays after the reboot; a label
// with another value is recorded with it, to be restored.
func addMarks(n *corev1.Node, m *v1alpha1.NodeMarking) {
	rec := Marks{}
	for k, val := range m.DuringLabels() {
		have, ok := n.Labels[k]
		if ok && have == string(val) {
			continue
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		ml := MarkedLabel{Value: string(val)}
		if ok {
			ml.Previous = &have
		}
		if rec.Labels == nil {
			rec.Labels = map[string]MarkedLabel{}
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
		rec.Taints = append(rec.Taints, MarkedTaint{Key: t.Key, Value: string(t.Value), Effect: t.Effect})
	}
	n.Annotations[NodeMarks] = Encode(rec)
}

// removeMarks takes off the node what the NodeMarks annotation says kmaint
// added, and the annotation. A label or taint someone changed since is
// theirs now and stays. An annotation that cannot be read never gets here:
// such a node is not completed, released or uncordoned (Read).
func removeMarks(n *corev1.Node) {
	var rec Marks
	if ok, err := Decode(n, NodeMarks, &rec); !ok || err != nil {
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
		return slices.Contains(rec.Taints, MarkedTaint{Key: have.Key, Value: have.Value, Effect: string(have.Effect)})
	})
	delete(n.Annotations, NodeMarks)
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
