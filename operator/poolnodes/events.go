package poolnodes

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Events records what a controller did to a node of a pool.
type Events struct {
	Recorder events.EventRecorder
}

// Both records an event on the node and on its pool, each naming the other
// as the related object. The built-in default pool has no object: the event
// is then on the node only.
func (e Events) Both(pool *v1alpha1.MaintenancePool, node *corev1.Node, eventType, reason, action, note string, args ...any) {
	if pool.UID == "" {
		e.Recorder.Eventf(node, nil, eventType, reason, action, note, args...)
		return
	}
	e.Recorder.Eventf(node, pool, eventType, reason, action, note, args...)
	e.Recorder.Eventf(pool, node, eventType, reason, action, note, args...)
}

// Node records a routine step of one node's reboot (admitted, approved,
// completed, settled) on the node only, naming the pool as the related
// object. Every reboot takes these steps, so on the pool too they would
// double the writes and bury, among thousands of them, the events that
// concern the pool; the pool's status and the NodeMaintenances tell the
// same story.
func (e Events) Node(pool *v1alpha1.MaintenancePool, node *corev1.Node, eventType, reason, action, note string, args ...any) {
	if pool.UID == "" {
		e.Recorder.Eventf(node, nil, eventType, reason, action, note, args...)
		return
	}
	e.Recorder.Eventf(node, pool, eventType, reason, action, note, args...)
}
