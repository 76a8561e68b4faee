package gen

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SetCondition writes the node's condition of cond's type, as
// node-problem-detector or another writer of a Node's status does, leaving
// the others as they are. A zero LastTransitionTime is now when the status
// changes and the one there when it does not, as such a writer keeps it;
// a test that backdates or forward-dates it gives one. The heartbeat is
// now.
func SetCondition(ctx context.Context, c client.Client, node string, cond corev1.NodeCondition) error {
	err := kubeletRetry(ctx, func() error {
		n := &corev1.Node{}
		if err := c.Get(ctx, types.NamespacedName{Name: node}, n); err != nil {
			return err
		}
		now := metav1.NewTime(time.Now())
		set := cond
		set.LastHeartbeatTime = now
		i := 0
		for i < len(n.Status.Conditions) && n.Status.Conditions[i].Type != cond.Type {
			i++
		}
		if set.LastTransitionTime.IsZero() {
			set.LastTransitionTime = now
			if i < len(n.Status.Conditions) && n.Status.Conditions[i].Status == cond.Status {
				set.LastTransitionTime = n.Status.Conditions[i].LastTransitionTime
			}
		}
		if i < len(n.Status.Conditions) {
			n.Status.Conditions[i] = set
		} else {
			n.Status.Conditions = append(n.Status.Conditions, set)
		}
		return c.Status().Update(ctx, n)
	})
	if err != nil {
		return fmt.Errorf("set condition %s of node %s: %w", cond.Type, node, err)
	}
	return nil
}
