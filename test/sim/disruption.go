package sim

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// disruptionWorkers is how many budgets the simulated disruption
// controller brings up to date at once. Each sync is one budget's pods and
// at most one write, so a few workers keep up with hundreds of evictions a
// second.
const disruptionWorkers = 4

// disruptionDeletionTimeout is how long an eviction's entry in a budget's
// DisruptedPods holds its pod out of the healthy count while the pod is not
// yet seen terminating: the real controller's DeletionTimeout.
const disruptionDeletionTimeout = 2 * time.Minute

// disruptionCoalesce is how long a budget's sync waits after the change
// that queued it, so that an eviction's write of the budget and its pod's
// deletion, a few milliseconds apart, make one status write, not two. Each
// write the controller makes is one more an eviction of the same budget can
// conflict with, and the API server retries a conflicting eviction only
// after half a second; a real controller's informers and queue lag at least
// as much.
const disruptionCoalesce = 10 * time.Millisecond

// podsByLabel indexes pods by namespace and each of their labels
// ("ns/key=value"), so that a budget's sync reads its own pods, not every
// pod of a namespace of tens of thousands.
const podsByLabel = "namespace/label"

// runDisruptionController plays kube-controller-manager's disruption
// controller, which envtest does not run: it keeps each
// PodDisruptionBudget's status in step with its pods, so that evictions are
// allowed and refused as in a real cluster.
//
// Like the real controller it syncs one budget per key: a pod that changes
// queues the budgets that select it, and the sync writes that budget's
// status once, promptly. A budget's DisruptedPods (the pods the API server
// let evictions take and that the controller has not yet seen go) count
// as unhealthy until they are seen terminating or gone, so a sync that
// sees an eviction's write before its pod's deletion never gives the
// allowance back early. A budget status that lags its pods makes
// evictions that the budget has room for fail with 429, and a drain then
// waits for its next step; one synced per namespace, with every budget of
// the namespace recounted over every pod of it at each pod change and a
// backoff that grew with each write conflict anywhere in the namespace,
// lagged by seconds in a rollout of hundreds of nodes.
func runDisruptionController(ctx context.Context, cs kubernetes.Interface) error {
	factory := informers.NewSharedInformerFactory(cs, 0)
	pods := factory.Core().V1().Pods()
	pdbs := factory.Policy().V1().PodDisruptionBudgets()
	if err := pods.Informer().AddIndexers(cache.Indexers{podsByLabel: indexPodLabels}); err != nil {
		return err
	}
	// Failures (write conflicts, mostly with evictions) back off per
	// budget, to a second at most: a budget that failed often must not wait
	// long for the next event, which a drain blocked by a stale budget
	// never brings.
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](5*time.Millisecond, time.Second))
	budgetHandlers := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { enqueueBudget(queue, obj) },
		UpdateFunc: func(_, obj any) { enqueueBudget(queue, obj) },
		DeleteFunc: func(obj any) { enqueueBudget(queue, obj) },
	}
	podHandlers := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { enqueueBudgetsOf(queue, pdbs.Lister(), obj) },
		UpdateFunc: func(_, obj any) { enqueueBudgetsOf(queue, pdbs.Lister(), obj) },
		DeleteFunc: func(obj any) { enqueueBudgetsOf(queue, pdbs.Lister(), obj) },
	}
	if _, err := pods.Informer().AddEventHandler(podHandlers); err != nil {
		return err
	}
	if _, err := pdbs.Informer().AddEventHandler(budgetHandlers); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	b := budgetSyncer{cs: cs, pods: pods.Informer().GetIndexer(), pdbs: pdbs.Lister()}
	for range disruptionWorkers {
		go func() {
			for {
				key, shutdown := queue.Get()
				if shutdown {
					return
				}
				recheck, err := b.sync(ctx, key)
				switch {
				case err != nil && ctx.Err() == nil:
					queue.AddRateLimited(key)
				default:
					queue.Forget(key)
				}
				if recheck > 0 {
					queue.AddAfter(key, recheck)
				}
				queue.Done(key)
			}
		}()
	}
	return nil
}

func accessor(obj any) (metav1.Object, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	return apimeta.Accessor(obj)
}

func indexPodLabels(obj any) ([]string, error) {
	m, err := accessor(obj)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(m.GetLabels()))
	for k, v := range m.GetLabels() {
		keys = append(keys, m.GetNamespace()+"/"+k+"="+v)
	}
	return keys, nil
}

func enqueueBudget(queue workqueue.TypedRateLimitingInterface[cache.ObjectName], obj any) {
	if m, err := accessor(obj); err == nil {
		queue.AddAfter(cache.ObjectName{Namespace: m.GetNamespace(), Name: m.GetName()}, disruptionCoalesce)
	}
}

// enqueueBudgetsOf queues every budget whose selector matches the pod.
func enqueueBudgetsOf(queue workqueue.TypedRateLimitingInterface[cache.ObjectName], budgets policylisters.PodDisruptionBudgetLister, obj any) {
	m, err := accessor(obj)
	if err != nil {
		return
	}
	list, err := budgets.PodDisruptionBudgets(m.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pdb := range list {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(m.GetLabels())) {
			continue
		}
		queue.AddAfter(cache.ObjectName{Namespace: pdb.Namespace, Name: pdb.Name}, disruptionCoalesce)
	}
}

// budgetSyncer brings one budget's status up to date with its pods.
type budgetSyncer struct {
	cs   kubernetes.Interface
	pods cache.Indexer
	pdbs policylisters.PodDisruptionBudgetLister
}

// sync writes the budget's status if it changed. recheck, when positive,
// is when an entry of its DisruptedPods expires and the status must be
// computed again.
func (b budgetSyncer) sync(ctx context.Context, key cache.ObjectName) (recheck time.Duration, err error) {
	pdb, err := b.pdbs.PodDisruptionBudgets(key.Namespace).Get(key.Name)
	if err != nil {
		return 0, nil // deleted: nothing to keep current
	}
	pods, err := b.selectedPods(pdb)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	disrupted := map[string]metav1.Time{}
	expected, healthy := int32(0), int32(0)
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		expected++
		if at, ok := pdb.Status.DisruptedPods[p.Name]; ok {
			if left := at.Add(disruptionDeletionTimeout).Sub(now); left > 0 {
				// Evicted, its deletion not seen yet: not healthy.
				disrupted[p.Name] = at
				if recheck == 0 || left < recheck {
					recheck = left
				}
				continue
			}
		}
		if podReady(p) {
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
	if len(disrupted) == 0 {
		disrupted = nil
	}
	st := pdb.Status
	if st.ObservedGeneration == pdb.Generation && st.DisruptionsAllowed == allowed && st.CurrentHealthy == healthy &&
		st.DesiredHealthy == desired && st.ExpectedPods == expected && sameKeys(st.DisruptedPods, disrupted) {
		return recheck, nil
	}
	next := pdb.DeepCopy()
	next.Status.ObservedGeneration = pdb.Generation
	next.Status.DisruptionsAllowed, next.Status.CurrentHealthy = allowed, healthy
	next.Status.DesiredHealthy, next.Status.ExpectedPods = desired, expected
	next.Status.DisruptedPods = disrupted
	if _, err := b.cs.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return recheck, err
	}
	return recheck, nil
}

// selectedPods are the pods of the budget's namespace its selector
// matches: through the label index when the selector names a label, as
// every simulated budget's does.
func (b budgetSyncer) selectedPods(pdb *policyv1.PodDisruptionBudget) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || sel.Empty() {
		return nil, nil // matches nothing, as the eviction API treats it
	}
	var candidates []any
	if pdb.Spec.Selector != nil && len(pdb.Spec.Selector.MatchLabels) > 0 {
		for k, v := range pdb.Spec.Selector.MatchLabels {
			if candidates, err = b.pods.ByIndex(podsByLabel, pdb.Namespace+"/"+k+"="+v); err != nil {
				return nil, err
			}
			break
		}
	} else if candidates, err = b.pods.ByIndex(cache.NamespaceIndex, pdb.Namespace); err != nil {
		return nil, err
	}
	var pods []*corev1.Pod
	for _, obj := range candidates {
		if p, ok := obj.(*corev1.Pod); ok && sel.Matches(labels.Set(p.Labels)) {
			pods = append(pods, p)
		}
	}
	return pods, nil
}

// podReady is what the real controller counts as healthy: the pod's Ready
// condition.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func sameKeys(a, b map[string]metav1.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}
