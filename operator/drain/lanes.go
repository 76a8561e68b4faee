package drain

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// workloadLanes lets one eviction at a time through per workload, across
// every drain of the operator.
//
// The API server admits an eviction under a PodDisruptionBudget by
// updating the budget's status, guarded by its resourceVersion. Two
// evictions under one budget at once conflict, and the loser sleeps half a
// second before it reads the budget again (EvictionsRetry in
// kube-apiserver's eviction REST), as often as it loses. kmaint drains many
// nodes at once, and a workload spread over the cluster has a pod on many
// of them: in a 500-node rollout one eviction in five took half a second or
// more, and at the 99th percentile 2.3 s. Evicting a workload's pods one
// after another costs a round trip each instead.
//
// A workload is a pod's controller (a ReplicaSet, a StatefulSet, a Job):
// a budget usually covers one workload's pods, and the pod names its
// controller, so no budget needs to be read or watched. Pods of a budget
// over several workloads still go in parallel, and may still conflict, as
// they did before. Pods without a controller have no lane.
type workloadLanes struct {
	mu sync.Mutex
	// lanes are the lanes in use, each with how many evictions hold or wait
	// for it; a lane no eviction uses is dropped, so that the map holds the
	// workloads of the drains under way, not every workload ever drained.
	lanes map[string]*lane
}

type lane struct {
	// free holds a token while no eviction is in flight.
	free  chan struct{}
	users int
}

// enter waits until the pod's workload has no eviction in flight, and
// returns the function that lets the next one through. It gives up when
// ctx ends (the drain was stopped, or its step ran out of time).
func (w *workloadLanes) enter(ctx context.Context, pod *corev1.Pod) (leave func(), err error) {
	key := workloadOf(pod)
	if key == "" {
		return func() {}, nil
	}
	w.mu.Lock()
	if w.lanes == nil {
		w.lanes = map[string]*lane{}
	}
	l := w.lanes[key]
	if l == nil {
		l = &lane{free: make(chan struct{}, 1)}
		l.free <- struct{}{}
		w.lanes[key] = l
	}
	l.users++
	w.mu.Unlock()

	done := func() {
		w.mu.Lock()
		if l.users--; l.users == 0 {
			delete(w.lanes, key)
		}
		w.mu.Unlock()
	}
	leave = func() {
		l.free <- struct{}{}
		done()
	}
	// A free lane is taken even by an eviction whose context ended (which
	// then fails on its own): which of two ready cases a select takes is
	// chance, and a wait should end only for want of the lane.
	select {
	case <-l.free:
		return leave, nil
	default:
	}
	select {
	case <-l.free:
		return leave, nil
	case <-ctx.Done():
		done()
		return nil, fmt.Errorf("wait for the eviction of another pod of %s: %w", key, context.Cause(ctx))
	}
}

// workloadOf names the pod's controller, "" when it has none.
func workloadOf(pod *corev1.Pod) string {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return ""
	}
	return fmt.Sprintf("%s %s/%s (%s)", ref.Kind, pod.Namespace, ref.Name, ref.APIVersion)
}
