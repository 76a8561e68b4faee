package gen

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// FinishPodDeletions plays every kubelet's part in pod deletion until ctx is
// done: a pod bound to a node stays, terminating, until its kubelet confirms
// it is gone, and envtest runs no kubelet. It watches pods, not polls.
func FinishPodDeletions(ctx context.Context, cs kubernetes.Interface) error {
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Core().V1().Pods().Informer()
	finish := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.DeletionTimestamp == nil {
			return
		}
		del := func() error {
			return cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
		if err := del(); err == nil || apierrors.IsNotFound(err) || ctx.Err() != nil {
			return
		}
		// A loaded API server failed or timed out: like a kubelet, try
		// again, or the pod stays terminating and its node's drain never
		// ends. Off the informer's goroutine, so other pods go on.
		go func() {
			_ = retry.OnError(kubeletBackoff(), func(err error) bool { return !apierrors.IsNotFound(err) && ctx.Err() == nil }, del)
		}()
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    finish,
		UpdateFunc: func(_, obj any) { finish(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return nil
}
