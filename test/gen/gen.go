package gen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// NodeOption changes a Node under construction.
type NodeOption func(*corev1.Node)

// Node returns a Ready node with boot ID "boot-0".
func Node(name string, opts ...NodeOption) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
			NodeInfo:   corev1.NodeSystemInfo{BootID: "boot-0"},
		},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

// Labels adds labels.
func Labels(kv ...string) NodeOption {
	return func(n *corev1.Node) {
		for i := 0; i+1 < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
	}
}

// BootID sets the boot ID.
func BootID(id string) NodeOption {
	return func(n *corev1.Node) { n.Status.NodeInfo.BootID = id }
}

// NotReady makes the node's Ready condition False.
func NotReady() NodeOption {
	return func(n *corev1.Node) { SetReady(n, false) }
}

// Unschedulable cordons the node, as a person with kubectl cordon would.
func Unschedulable() NodeOption {
	return func(n *corev1.Node) { n.Spec.Unschedulable = true }
}

// SetReady sets the node's Ready condition.
func SetReady(n *corev1.Node, ready bool) {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].Status = status
			return
		}
	}
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: status})
}

// CreateNode creates the node and then its status, as a kubelet registers.
func CreateNode(ctx context.Context, c client.Client, n *corev1.Node) error {
	status := n.Status
	if err := c.Create(ctx, n); err != nil {
		return fmt.Errorf("create node %s: %w", n.Name, err)
	}
	n.Status = status
	if err := c.Status().Update(ctx, n); err != nil {
		return fmt.Errorf("set status of node %s: %w", n.Name, err)
	}
	return nil
}

// Request writes the daemon's reboot-requested annotation for the node's
// current boot, adding a request with this id to those already there.
func Request(ctx context.Context, c client.Client, node, id string, source v1alpha1.Source, at time.Time) error {
	// The operator writes the node meanwhile (it names its requests, it
	// admits): read it again on a conflict, as the daemon's next sync does.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := c.Get(ctx, types.NamespacedName{Name: node}, n); err != nil {
			return err
		}
		base := n.DeepCopy()
		var r protocol.Requested
		if _, err := protocol.Decode(n, protocol.RebootRequested, &r); err != nil {
			return err
		}
		if r.BootID != protocol.BootID(n) {
			r = protocol.Requested{BootID: protocol.BootID(n)}
		}
		r.Requests = append(r.Requests, Req(id, source, at))
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[protocol.RebootRequested] = protocol.Encode(r)
		return c.Patch(ctx, n, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
}

// Reboot does to the node what a reboot does, seen from the API: the node
// goes NotReady (unless fast), comes back with a new boot ID, and its daemon,
// finding no request in the new boot, clears reboot-requested.
func Reboot(ctx context.Context, c client.Client, node, newBootID string, fast bool) error {
	if !fast {
		old := &corev1.Node{}
		if err := c.Get(ctx, types.NamespacedName{Name: node}, old); err != nil {
			return err
		}
		if err := SetBoot(ctx, c, node, old.Status.NodeInfo.BootID, false); err != nil {
			return err
		}
	}
	if err := SetBoot(ctx, c, node, newBootID, true); err != nil {
		return err
	}
	n := &corev1.Node{}
	if err := c.Get(ctx, types.NamespacedName{Name: node}, n); err != nil {
		return err
	}
	base := n.DeepCopy()
	delete(n.Annotations, protocol.RebootRequested)
	return c.Patch(ctx, n, client.MergeFrom(base))
}

// Pod returns a pod bound to the node, owned by a ReplicaSet so that a drain
// may evict it.
func Pod(namespace, name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name + "-rs",
				UID: types.UID("rs-" + name), Controller: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}},
		},
	}
}

// PDB creates a PodDisruptionBudget over pods with these labels and sets the
// status the disruption controller would compute, allowing `allowed`
// disruptions. envtest runs no controller manager, so the test plays it.
func PDB(ctx context.Context, c client.Client, namespace, name string, labels map[string]string, allowed int32) error {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	if err := c.Create(ctx, pdb); err != nil {
		return fmt.Errorf("create pdb %s: %w", name, err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptionsAllowed: allowed,
		CurrentHealthy:     1 + allowed,
		DesiredHealthy:     1,
		ExpectedPods:       1 + allowed,
	}
	return c.Status().Update(ctx, pdb)
}

// Pool returns a pool selecting nodes labelled pool=name.
func Pool(name string, maxUnavailable intstr.IntOrString) *v1alpha1.MaintenancePool {
	return &v1alpha1.MaintenancePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.MaintenancePoolSpec{
			NodeSelector:   &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.SelectorValue{"pool": v1alpha1.SelectorValue(name)}},
			MaxUnavailable: &maxUnavailable,
		},
	}
}

// CreatePod creates the pod and marks it Running and Ready, as its kubelet
// would. A Pending pod is evicted whatever its PodDisruptionBudget says, so a
// pod that never ran would make every budget look generous. A pod given
// with conditions in its status gets that status, as its kubelet reports it
// (but for the QoS class, which the API server sets).
//
// A pod for a node is created unbound, marked Running, and only then bound
// to its node: a drain going on there would otherwise find it Pending in
// between and evict it past its budget, which no test means. A mirror pod
// is created on its node, as the API server asks; no drain evicts it.
func CreatePod(ctx context.Context, c client.Client, pod *corev1.Pod) error {
	reported := pod.Status.DeepCopy()
	node := pod.Spec.NodeName
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
		pod.Spec.NodeName = ""
	}
	if err := c.Create(ctx, pod); err != nil {
		pod.Spec.NodeName = node
		return fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	// Like a kubelet, it tries again when a loaded API server fails: a pod
	// left Pending would keep its budget from allowing any eviction.
	err := kubeletRetry(ctx, func() error {
		running := pod.DeepCopy()
		if len(reported.Conditions) > 0 {
			running.Status = *reported.DeepCopy()
			running.Status.QOSClass = pod.Status.QOSClass
		} else {
			running.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		running.Status.Phase = corev1.PodRunning
		err := c.Status().Update(ctx, running)
		if apierrors.IsConflict(err) {
			if getErr := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); getErr != nil {
				return getErr
			}
		}
		return err
	})
	if err != nil {
		pod.Spec.NodeName = node
		return fmt.Errorf("set pod %s/%s running: %w", pod.Namespace, pod.Name, err)
	}
	if node == "" || pod.Spec.NodeName == node { // no node, or a mirror pod made there
		return nil
	}
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	bind := func() error {
		err := c.SubResource("binding").Create(ctx, pod, binding)
		if apierrors.IsConflict(err) { // a try whose answer was lost may have bound it
			bound := &corev1.Pod{}
			if getErr := c.Get(ctx, client.ObjectKeyFromObject(pod), bound); getErr == nil && bound.Spec.NodeName == node {
				return nil
			}
		}
		return err
	}
	if err := kubeletRetry(ctx, bind); err != nil {
		return fmt.Errorf("bind pod %s/%s to node %s: %w", pod.Namespace, pod.Name, node, err)
	}
	pod.Spec.NodeName = node
	return nil
}

// SetBoot plays the kubelet across a reboot: it reports the node's boot ID
// and Ready condition, as a kubelet does when the node goes down and when it
// comes back. Like a kubelet it tries again when the node changed between
// its read and its write (the operator and the daemon write the node too),
// and when the API server fails or is too slow to answer, as a loaded one
// is: a simulated node whose kubelet gave up would never come back.
func SetBoot(ctx context.Context, c client.Client, node, bootID string, ready bool) error {
	err := kubeletRetry(ctx, func() error {
		n := &corev1.Node{}
		if err := c.Get(ctx, types.NamespacedName{Name: node}, n); err != nil {
			return err
		}
		n.Status.NodeInfo.BootID = bootID
		SetReady(n, ready)
		return c.Status().Update(ctx, n)
	})
	if err != nil {
		return fmt.Errorf("set boot of node %s: %w", node, err)
	}
	return nil
}

// kubeletPatience is how long the simulated kubelet tries one write again:
// longer than an API server restart, shorter than a test.
const kubeletPatience = 2 * time.Minute

// kubeletRetry runs write until it succeeds, finds its object gone, ctx
// ends or kubeletPatience has passed, as a kubelet tries again: 20 ms after
// the first failure (a conflict), doubling up to every 5 s (an API server
// that struggles, or restarts). It is not wait.Backoff with a Cap, whose
// steps end once the cap is reached: that gave up after about 10 s, and a
// pod left Pending across an API server restart kept its
// PodDisruptionBudget from allowing any eviction for good (found by a
// 40-minute soak).
func kubeletRetry(ctx context.Context, write func() error) error {
	return retryFor(ctx, 20*time.Millisecond, 5*time.Second, kubeletPatience, write)
}

// retryFor runs write until it succeeds, finds its object gone, ctx ends
// or patience has passed, waiting first after the first failure, doubling
// up to most.
func retryFor(ctx context.Context, first, most, patience time.Duration, write func() error) error {
	giveUp := time.Now().Add(patience)
	delay := first
	for {
		err := write()
		if err == nil || apierrors.IsNotFound(err) || ctx.Err() != nil || time.Now().After(giveUp) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay + time.Duration(rand.Int64N(int64(delay/5)+1))):
		}
		delay = min(2*delay, most)
	}
}
