package sim

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// runDisruptionController plays kube-controller-manager's disruption
// controller, which envtest does not run: it keeps each
// PodDisruptionBudget's status in step with its pods, so that evictions are
// allowed and refused as in a real cluster.
func runDisruptionController(ctx context.Context, cs kubernetes.Interface) error {
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(slimPod))
	pods := factory.Core().V1().Pods()
	pdbs := factory.Policy().V1().PodDisruptionBudgets()
	// Failures back off to a second at most: a sync that failed once too
	// often must not wait a quarter of an hour for the next event, which a
	// drain blocked by a stale budget never brings.
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Second))
	enqueue := func(obj any) {
		if m, err := accessor(obj); err == nil {
			queue.Add(m.GetNamespace())
		}
	}
	handlers := cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue}
	if _, err := pods.Informer().AddEventHandler(handlers); err != nil {
		return err
	}
	if _, err := pdbs.Informer().AddEventHandler(handlers); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	go func() {
		for {
			ns, shutdown := queue.Get()
			if shutdown {
				return
			}
			if err := syncBudgets(ctx, cs, ns, pods.Lister().Pods(ns).List, pdbs.Lister().PodDisruptionBudgets(ns).List); err != nil && ctx.Err() == nil {
				queue.AddRateLimited(ns)
			} else {
				queue.Forget(ns)
			}
			queue.Done(ns)
		}
	}()
	return nil
}

// slimPod keeps of a pod what a budget's status counts: its name,
// namespace, labels, deletion and phase. At 5000 nodes the simulated
// cluster has 100,000 pods shaped like real ones, each some 40 KB when
// decoded (managed fields, spec, status), which this cache held whole.
func slimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			Labels: p.Labels, DeletionTimestamp: p.DeletionTimestamp},
		Status: corev1.PodStatus{Phase: p.Status.Phase},
	}, nil
}

func accessor(obj any) (metav1.Object, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	return apimeta.Accessor(obj)
}

// syncBudgets brings every budget of the namespace up to date; one that
// cannot be written does not keep the others stale.
func syncBudgets(ctx context.Context, cs kubernetes.Interface, ns string,
	listPods func(labels.Selector) ([]*corev1.Pod, error),
	listPDBs func(labels.Selector) ([]*policyv1.PodDisruptionBudget, error)) error {
	budgets, err := listPDBs(labels.Everything())
	if err != nil {
		return err
	}
	var errs []error
	for _, pdb := range budgets {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		matching, err := listPods(sel)
		if err != nil {
			return err
		}
		expected, healthy := int32(0), int32(0)
		for _, p := range matching {
			if p.DeletionTimestamp != nil {
				continue
			}
			expected++
			if p.Status.Phase == corev1.PodRunning {
				healthy++
			}
		}
		desired := expected
		switch {
		case pdb.Spec.MinAvailable != nil:
			v, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
			desired = int32(v)
		case pdb.Spec.MaxUnavailable != nil:
			// A percentage rounds up, as the real controller's does: 10%
			// of 9 pods lets one go, not none.
			v, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
			// As the real controller does: a budget of an app with fewer
			// pods than it may lose wants none healthy, not -1, which the
			// API server refuses.
			desired = max(expected-int32(v), 0)
		}
		allowed := max(healthy-desired, 0)
		st := pdb.Status
		if st.ObservedGeneration == pdb.Generation && st.DisruptionsAllowed == allowed && st.CurrentHealthy == healthy &&
			st.DesiredHealthy == desired && st.ExpectedPods == expected {
			continue
		}
		next := pdb.DeepCopy()
		next.Status.ObservedGeneration = pdb.Generation
		next.Status.DisruptionsAllowed, next.Status.CurrentHealthy = allowed, healthy
		next.Status.DesiredHealthy, next.Status.ExpectedPods = desired, expected
		next.Status.DisruptedPods = nil
		if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
