package sim

import (
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// refreshStatus plays the kubelets' periodic Node status report until the
// cluster stops: each node's condition heartbeats are written about once a
// period, the nodes spread evenly over it in a random order, as kubelets
// started at different moments are. A kubelet patches its Node's status
// whether or not anything changed once nodeStatusReportFrequency has passed
// (5 minutes by default), so an operator watching Nodes sees an update per
// node and period even in a quiet cluster.
func (c *Cluster) refreshStatus(period time.Duration) {
	if len(c.nodes) == 0 {
		return
	}
	tick := time.NewTicker(max(period/time.Duration(len(c.nodes)), time.Millisecond))
	defer tick.Stop()
	order := rand.Perm(len(c.nodes))
	for i := 0; ; i++ {
		select {
		case <-c.ctx.Done():
			return
		case <-tick.C:
		}
		if err := c.heartbeat(c.nodes[order[i%len(order)]].Name()); err != nil && c.ctx.Err() == nil {
			c.Config.Log.Error(err, "Simulated kubelet could not report status")
		}
	}
}

// heartbeat writes the node's condition heartbeats, as a kubelet's status
// report does. It never writes over a change it did not see (a reboot's
// Ready condition): a conflict waits for the next round.
func (c *Cluster) heartbeat(name string) error {
	n := &corev1.Node{}
	if err := c.Bed.Client.Get(c.ctx, client.ObjectKey{Name: name}, n); err != nil {
		return client.IgnoreNotFound(err)
	}
	base := n.DeepCopy()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].LastHeartbeatTime = now
	}
	err := c.Bed.Client.Status().Patch(c.ctx, n, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
