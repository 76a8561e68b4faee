package drain

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kmaint/kmaint/operator/hooks"
)

// isHookPod reports whether pod is one of kmaint's hook Jobs' pods: in the
// hooks namespace, with the labels kmaint puts on them. A drain leaves
// them be: a beforeReboot hook's Job runs on the drained node, and the
// drain goes on stepping while it does (a person who uncordons the node
// meanwhile has it drain again), so evicting its pod would fail the hook
// (its Job never retries), and a finished one's pod keeps its logs. Only
// the hooks namespace counts: anyone can put the labels on a pod of their
// own, and only kmaint and the cluster's admins make pods there.
func isHookPod(pod *corev1.Pod, hooksNamespace string) bool {
	return hooksNamespace != "" && pod.Namespace == hooksNamespace &&
		pod.Labels[hooks.ManagedByLabel] == "kmaint" && pod.Labels[hooks.TokenLabel] != ""
}

// withoutHookPods returns c with kmaint's hook pods left out of its pod
// Lists, so that the drain helper neither evicts nor deletes them, nor
// counts them as blockers (a hook's pod with an emptyDir volume would
// block the drain before any later filter saw it). c is outermost: it
// filters what the drain's watch answers too.
func (d *Drainer) withoutHookPods(c kubernetes.Interface) kubernetes.Interface {
	if d.HooksNamespace == "" {
		return c
	}
	return hookPodsHidden{Interface: c, ns: d.HooksNamespace}
}

type hookPodsHidden struct {
	kubernetes.Interface
	ns string
}

func (c hookPodsHidden) CoreV1() corev1client.CoreV1Interface {
	return hookPodsCore{CoreV1Interface: c.Interface.CoreV1(), ns: c.ns}
}

type hookPodsCore struct {
	corev1client.CoreV1Interface
	ns string
}

func (c hookPodsCore) Pods(namespace string) corev1client.PodInterface {
	return hookPodsOf{PodInterface: c.CoreV1Interface.Pods(namespace), ns: c.ns}
}

type hookPodsOf struct {
	corev1client.PodInterface
	ns string
}

// List leaves the hook pods out of a copy: the list may be the drain's
// watch's own.
func (o hookPodsOf) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	list, err := o.PodInterface.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	kept := *list
	kept.Items = slices.DeleteFunc(slices.Clone(list.Items), func(p corev1.Pod) bool { return isHookPod(&p, o.ns) })
	return &kept, nil
}
