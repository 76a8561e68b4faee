package drain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	kubedrain "k8s.io/kubectl/pkg/drain"

	"github.com/kmaint/kmaint/operator/api/v1alpha1"
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
}

// Step evicts every pod on the node that must leave and is not already
// terminating, once, and reports what is left. It never waits.
func (d *Drainer) Step(ctx context.Context, node string, opts v1alpha1.DrainOptions) (Progress, error) {
	helper := &kubedrain.Helper{
		Ctx:    ctx,
		Client: d.Client,
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

	list, errs := helper.GetPodsForDeletion(node)
	if list == nil {
		return Progress{}, fmt.Errorf("list pods on node %s: %w", node, errors.Join(errs...))
	}
	pods := list.Pods()
	if len(errs) > 0 {
		// Pods the options do not let us evict (unmanaged pods, emptyDir data)
		// block the whole drain, as they do for kubectl: evicting the others
		// would disturb workloads for a drain that cannot finish.
		p := Progress{Remaining: len(pods)}
		for _, err := range errs {
			p.Blockers = append(p.Blockers, err.Error())
		}
		return p, nil
	}

	p := Progress{Remaining: len(pods), Done: len(pods) == 0}
	var failed []error
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue // already terminating: its kubelet finishes it
		}
		err := helper.EvictPod(pod, policyv1.SchemeGroupVersion)
		switch {
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

func blockerMessage(pod corev1.Pod, err error) string {
	return fmt.Sprintf("eviction of pod %s/%s refused: %v", pod.Namespace, pod.Name, err)
}
