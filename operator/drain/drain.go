package drain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	kubedrain "k8s.io/kubectl/pkg/drain"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Progress is where a drain stands after a step.
type Progress struct {
	// Done is true when no pod that must leave is left on the node.
	Done bool
	// Remaining is the number of pods still to leave, terminating or not.
	Remaining int
	// Evicted is the number of evictions this step started.
	Evicted int
	// Blockers say what keeps the drain from finishing: evictions a
	// PodDisruptionBudget refused, or pods the options do not allow to evict.
	Blockers []string
}

// Drainer drains nodes through the eviction API, so PodDisruptionBudgets hold.
type Drainer struct {
	// Client reaches the API server.
	Client kubernetes.Interface

	// Versions shares the reads of the pods' resource version with other
	// drains and the gate's pod checks; nil reads one for each drain.
	Versions *Versions

	// HooksNamespace is where kmaint's hook Jobs run; their pods are never
	// drained (hookpods.go). Empty: there are none.
	HooksNamespace string

	// daemonSets are the DaemonSets found to exist, so that a drain step
	// does not ask again for every agent pod of the node.
	daemonSets knownDaemonSets
	// workloads let one eviction at a time through per workload, across
	// the drains of every node (lanes.go).
	workloads workloadLanes
}

// PodsVersionAfter returns the pods' resource version as read by a List
// that began at or after t: shared through Versions, or read now.
func (d *Drainer) PodsVersionAfter(ctx context.Context, t time.Time) (string, error) {
	if d.Versions == nil {
		return PodsVersion(ctx, d.Client)
	}
	return d.Versions.After(ctx, t)
}

// Step evicts every pod on the node that must leave and is not already
// terminating, once, and reports what is left. It never waits. pods is
// what the drain's steps know of the node's pods (nodepods.go): they are
// listed no older than its version (podsince.go), read now if it has none,
// and watched from that List on.
func (d *Drainer) Step(ctx context.Context, node string, opts v1alpha1.DrainOptions, pods *NodePods) (Progress, error) {
	since, err := pods.sinceOrRead(ctx, d.Client)
	if err != nil {
		return Progress{}, err
	}
	helper := d.helper(ctx, opts, since)
	helper.Client = d.withoutHookPods(pods.client(helper.Client))
	list, errs := helper.GetPodsForDeletion(node)
	if list == nil {
		return Progress{}, fmt.Errorf("list pods on node %s: %w", node, errors.Join(errs...))
	}
	left := list.Pods()
	pods.await(left)
	if len(errs) > 0 {
		// Pods the options do not let us evict (unmanaged pods, emptyDir data)
		// block the whole drain, as they do for kubectl: evicting the others
		// would disturb workloads for a drain that cannot finish.
		p := Progress{Remaining: len(left)}
		for _, err := range errs {
			p.Blockers = append(p.Blockers, err.Error())
		}
		return p, nil
	}

	p := Progress{Remaining: len(left), Done: len(left) == 0}
	outcomes := d.evict(helper, left)
	var failed []error
	for i, err := range outcomes {
		pod := left[i]
		switch {
		case pod.DeletionTimestamp != nil:
			// already terminating: its kubelet finishes it
		case err == nil:
			p.Evicted++
		case apierrors.IsNotFound(err):
			p.Remaining--
		case apierrors.IsTooManyRequests(err):
			p.Blockers = append(p.Blockers, blockerMessage(pod, err))
		default:
			failed = append(failed, fmt.Errorf("evict pod %s/%s: %w", pod.Namespace, pod.Name, err))
		}
	}
	sort.Strings(p.Blockers)
	p.Done = p.Remaining == 0
	return p, errors.Join(failed...)
}

// evictionParallelism bounds the evictions of one step in flight at once.
const evictionParallelism = 16

// evict asks for the eviction of every pod not already terminating, in
// parallel as kubectl does, and returns each one's error by index. One
// after another, a node with dozens of pods spent its step on as many round
// trips to the API server. Pods of one workload go one after another, here
// and across every other drain (workloadLanes).
func (d *Drainer) evict(helper *kubedrain.Helper, pods []corev1.Pod) []error {
	outcomes := make([]error, len(pods))
	var wg sync.WaitGroup
	slots := make(chan struct{}, evictionParallelism)
	for i := range pods {
		if pods[i].DeletionTimestamp != nil {
			continue
		}
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			leave, err := d.workloads.enter(helper.Ctx, &pods[i])
			if err != nil {
				outcomes[i] = err
				return
			}
			defer leave()
			outcomes[i] = helper.EvictPod(pods[i], policyv1.SchemeGroupVersion)
		}()
	}
	wg.Wait()
	return outcomes
}

// helper is kubectl's drain helper with the pool's drain options, listing
// pods not older than podsVersion.
func (d *Drainer) helper(ctx context.Context, opts v1alpha1.DrainOptions, podsVersion string) *kubedrain.Helper {
	helper := &kubedrain.Helper{
		Ctx:    ctx,
		Client: podsSince(d.daemonSets.client(d.Client), podsVersion),
		Force:  opts.Force,
		// -1 keeps each pod's own termination grace period.
		GracePeriodSeconds:  -1,
		IgnoreAllDaemonSets: true,
		DeleteEmptyDirData:  opts.DeleteEmptyDirData,
		PodSelector:         opts.PodSelector,
		Out:                 io.Discard,
		ErrOut:              io.Discard,
	}
	if opts.GracePeriodSeconds != nil {
		helper.GracePeriodSeconds = int(*opts.GracePeriodSeconds)
	}
	return helper
}

func blockerMessage(pod corev1.Pod, err error) string {
	return fmt.Sprintf("eviction of pod %s/%s refused: %v", pod.Namespace, pod.Name, err)
}

// Force deletes, bypassing their PodDisruptionBudgets, the pods on the node
// that must leave and are not already terminating: those whose eviction a
// PodDisruptionBudget refused, or that nothing evicted yet. Pods the
// options keep (unmanaged pods without force, emptyDir data without
// deleteEmptyDirData) are not deleted: a reboot only restarts them in
// place, a deletion would lose them. Mirror, DaemonSet and hook pods are never
// among them. Before deleting anything it calls before with the pods it is
// about to delete (namespace/name, sorted), so that the caller records them
// first: a crash between the two then loses no name. It returns the pods
// deleted.
func (d *Drainer) Force(ctx context.Context, node string, opts v1alpha1.DrainOptions, before func(pods []string) error) ([]string, error) {
	since, err := PodsVersion(ctx, d.Client)
	if err != nil {
		return nil, err
	}
	helper := d.helper(ctx, opts, since)
	helper.Client = d.withoutHookPods(helper.Client)
	helper.DisableEviction = true
	list, errs := helper.GetPodsForDeletion(node)
	if list == nil {
		return nil, fmt.Errorf("list pods on node %s: %w", node, errors.Join(errs...))
	}
	var doomed []corev1.Pod
	var names []string
	for _, pod := range list.Pods() {
		if pod.DeletionTimestamp != nil {
			continue
		}
		doomed = append(doomed, pod)
		names = append(names, pod.Namespace+"/"+pod.Name)
	}
	sort.Strings(names)
	if len(doomed) == 0 {
		return nil, nil
	}
	if err := before(names); err != nil {
		return nil, err
	}
	var deleted []string
	var failed []error
	for _, pod := range doomed {
		err := helper.DeletePod(pod)
		switch {
		case err == nil, apierrors.IsNotFound(err):
			deleted = append(deleted, pod.Namespace+"/"+pod.Name)
		default:
			failed = append(failed, fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err))
		}
	}
	sort.Strings(deleted)
	return deleted, errors.Join(failed...)
}
