package gen

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// kubeletParallelism bounds the pod deletions the simulated kubelets make
// at once.
const kubeletParallelism = 32

// FinishPodDeletions plays every kubelet's part in pod deletion until ctx is
// done: a pod bound to a node stays, terminating, until its kubelet confirms
// it is gone, and envtest runs no kubelet. It watches pods, not polls.
func FinishPodDeletions(ctx context.Context, cs kubernetes.Interface) error {
	// The cache keeps of each pod only what a deletion needs: a simulated
	// cluster of 5000 nodes has 100,000 pods shaped like real ones, some
	// 40 KB each decoded.
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(func(obj any) (any, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return obj, nil
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID,
			ResourceVersion: p.ResourceVersion, DeletionTimestamp: p.DeletionTimestamp}}, nil
	}))
	inf := factory.Core().V1().Pods().Informer()
	slots := make(chan struct{}, kubeletParallelism)
	finish := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.DeletionTimestamp == nil {
			return
		}
		del := func() error {
			return cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
		// Every node has a kubelet of its own, so pods finish in parallel:
		// one at a time on the informer's goroutine, hundreds of pods
		// evicted at once in a large rollout took seconds each to go, and
		// the simulated drains measured this loop. Each deletion runs on
		// its own goroutine, at most kubeletParallelism at once. Like a
		// kubelet, a failed or timed-out deletion is tried again, or the
		// pod stays terminating and its node's drain never ends.
		go func() {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-slots }()
			_ = kubeletRetry(ctx, del)
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
