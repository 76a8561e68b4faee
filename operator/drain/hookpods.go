package drain

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

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
// filters what the drain's watch answers too. The pods are left out of a
// copy: the list may be the watch's own.
func (d *Drainer) withoutHookPods(c kubernetes.Interface) kubernetes.Interface {
	if d.HooksNamespace == "" {
		return c
	}
	return withPodLists(c, func(_ string, list listPods) listPods {
		return func(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
			pods, err := list(ctx, opts)
			if err != nil {
				return nil, err
			}
			kept := *pods
			kept.Items = slices.DeleteFunc(slices.Clone(pods.Items), func(p corev1.Pod) bool { return isHookPod(&p, d.HooksNamespace) })
			return &kept, nil
		}
	})
}
