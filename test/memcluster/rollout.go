package memcluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/index"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/shape"
)

// Rollout is a config rollout under way over every node of one pool, in
// a Cluster: what the benchmarks of the controllers that follow a rollout
// start from.
type Rollout struct {
	*Cluster
	// Pool names the pool; Config is the config it rolls out.
	Pool, Config string
	// Start is an hour before the rollout was made: the requests' times
	// count from it.
	Start time.Time
	// InFlight are the nodes approved and rebooting, in the order they
	// were admitted.
	InFlight []string
	asked    int
	// kept and keptInFlight are what KeepInFlight kept.
	kept         []client.Object
	keptInFlight []string
}

// NewRollout fills c with a pool of n realistic nodes (shape.RealisticNode)
// of maxUnavailable budget, each asking for a reboot into the pool's config
// (its daemon's annotation) with its NodeMaintenance open (Requested), the
// first budget of them admitted, approved and cordoned (Rebooting) a
// minute ago: rebooting within aftercare's bounds (a node approved an hour
// ago is not back in time, and aftercare's every reconcile after Refill
// would mark them all so).
func NewRollout(c *Cluster, pool string, n, budget int) (*Rollout, error) {
	ro := &Rollout{Cluster: c, Pool: pool, Config: "os-2", Start: time.Now().Add(-time.Hour)}
	approved := time.Now().Add(-time.Minute)
	p := gen.Pool(pool, intstr.FromInt32(int32(budget)))
	p.Spec.DesiredConfig = ro.Config
	// As the gate counted them when the rollout began.
	p.Status.Nodes = int32(n)
	if err := c.Add(p); err != nil {
		return nil, err
	}
	for i := range n {
		name := fmt.Sprintf("node-%05d", i)
		node := shape.RealisticNode(name, pool, i, fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), "boot-0-"+name)
		node.Annotations[protocol.DesiredConfig] = ro.Config
		node.Annotations[protocol.CurrentConfig] = "os-1"
		nm := ro.Ask(node)
		if i < budget {
			boot := node.Status.NodeInfo.BootID
			at := approved.Add(time.Duration(i) * time.Millisecond)
			gen.Admitted(boot, at, nm.Status.RequestID)(node)
			gen.ApprovedAt(boot, at, nm.Status.RequestID)(node)
			gen.Unschedulable()(node)
			node.Annotations[protocol.Cordoned] = "true"
			nm.Status.Phase = v1alpha1.PhaseRebooting
			nm.Status.PhaseTimes.Draining = &metav1.Time{Time: at}
			nm.Status.PhaseTimes.Approved = &metav1.Time{Time: at}
			nm.Status.PhaseTimes.Rebooting = &metav1.Time{Time: at}
			ro.InFlight = append(ro.InFlight, name)
		}
		if err := c.Add(node, nm); err != nil {
			return nil, err
		}
	}
	return ro, nil
}

// Ask writes a request for the pool's config on the node, in its boot, as
// its daemon does, and returns the request's open NodeMaintenance, for the
// caller to add.
func (ro *Rollout) Ask(node *corev1.Node) *v1alpha1.NodeMaintenance {
	ro.asked++
	id := "req-" + strconv.Itoa(ro.asked)
	r := gen.Req(id, v1alpha1.SourceConfig, ro.Start.Add(time.Duration(ro.asked)*time.Millisecond))
	r.Config = ro.Config
	gen.Requested(node.Status.NodeInfo.BootID, r)(node)
	return &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: node.Name + "-" + id, CreationTimestamp: metav1.NewTime(ro.Start)},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: node.Name, Type: v1alpha1.RebootMaintenance, Source: v1alpha1.SourceConfig, Reason: "config " + ro.Config},
		Status: v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseRequested, RequestID: id, BootIDBefore: node.Status.NodeInfo.BootID,
			PhaseTimes: v1alpha1.PhaseTimes{Requested: &metav1.Time{Time: ro.Start}}},
	}
}

// Node returns a copy of the named node, to change and Set.
func (ro *Rollout) Node(name string) (*corev1.Node, error) {
	obj, err := ro.Object(&corev1.Node{}, client.ObjectKey{Name: name})
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Node).DeepCopy(), nil
}

// BackFromReboot brings the oldest node in flight back from its reboot: a
// new boot, Ready, its daemon's request of the old boot gone. It returns
// the node's name.
func (ro *Rollout) BackFromReboot() (string, error) { return ro.back(true) }

// BackBeforeItsDaemon brings the oldest node in flight back, Ready in a new
// boot, before its daemon starts and clears its request of the old boot,
// as every node is for a moment. It returns the node's name.
func (ro *Rollout) BackBeforeItsDaemon() (string, error) { return ro.back(false) }

// CompletedReboot brings the oldest node in flight back from its reboot,
// its daemon's word given, and completes the reboot in one patch as
// aftercare does (protocol.Complete; the bench pool marks nothing and
// settles at once): the event that frees a slot for the gate. It returns
// the node's name.
func (ro *Rollout) CompletedReboot() (string, error) {
	name, err := ro.back(true)
	if err != nil {
		return "", err
	}
	node, err := ro.Node(name)
	if err != nil {
		return "", err
	}
	protocol.Complete(nil, nil).Apply(node)
	return name, ro.Set(node)
}

func (ro *Rollout) back(daemon bool) (string, error) {
	name := ro.InFlight[0]
	ro.InFlight = ro.InFlight[1:]
	node, err := ro.Node(name)
	if err != nil {
		return "", err
	}
	node.Status.NodeInfo.BootID += "+"
	if daemon {
		delete(node.Annotations, protocol.RebootRequested)
	}
	return name, ro.Set(node)
}

// KeepInFlight remembers the nodes in flight and their open
// NodeMaintenances as they are now; Refill puts them back once none is left
// in flight, so that a benchmark's events, each of which takes one, never
// run out.
func (ro *Rollout) KeepInFlight() error {
	ro.kept, ro.keptInFlight = nil, slices.Clone(ro.InFlight)
	for _, name := range ro.InFlight {
		node, err := ro.Node(name)
		if err != nil {
			return err
		}
		var open v1alpha1.NodeMaintenanceList
		if err := ro.Client().List(context.Background(), &open, client.MatchingFields{index.OpenOnNode: name}); err != nil {
			return err
		}
		ro.kept = append(ro.kept, node)
		for i := range open.Items {
			ro.kept = append(ro.kept, &open.Items[i])
		}
	}
	return nil
}

// Refill puts back what KeepInFlight kept, once no node is in flight.
func (ro *Rollout) Refill() error {
	if len(ro.InFlight) > 0 {
		return nil
	}
	for _, obj := range ro.kept {
		if err := ro.Set(obj.DeepCopyObject().(client.Object)); err != nil {
			return err
		}
	}
	ro.InFlight = slices.Clone(ro.keptInFlight)
	return nil
}
