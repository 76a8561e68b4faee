package harness

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kmaint/kmaint/test/testbed"
)

// Healthy is the test's own reading of what a PodDisruptionBudget counts,
// as the disruption controller does: a pod that is Ready and not being
// deleted. An evicted pod stops counting the moment its deletion starts.
func Healthy(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodWatcher sees every change to the pods a PodDisruptionBudget guards,
// independently of the disruption controller and of kmaint, and remembers
// the fewest healthy at any one moment: the budget was kept when that is
// never below its minAvailable.
type PodWatcher struct {
	// floor, when above zero, fails the test the moment fewer pods than
	// that are healthy.
	floor int
	t     testing.TB

	mu      sync.Mutex
	pods    map[string]*corev1.Pod
	fewest  int
	worst   string // the pods at the fewest, and when
	moments int
	err     error // why the watch ended before the test did
	stopped bool  // the test has ended
}

// WatchHealthyPods starts a watcher on the pods of namespace that match
// selector (a label selector, e.g. "app=web"). It lists them first, so that
// the count starts from the whole set rather than growing as the watch
// replays it, and follows every change from that list's resource version,
// resuming the watch when the API server ends it, until the test ends.
func WatchHealthyPods(t testing.TB, bed *testbed.Bed, namespace, selector string) *PodWatcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pw := &PodWatcher{t: t, pods: map[string]*corev1.Pod{}}
	// The test's own cleanup may delete the pods next: what the watcher
	// sees from now on is no longer the test's.
	t.Cleanup(func() {
		cancel()
		pw.mu.Lock()
		pw.stopped = true
		pw.mu.Unlock()
	})
	cs, err := kubernetes.NewForConfig(bed.Config)
	if err != nil {
		t.Fatal(err)
	}
	pods := cs.CoreV1().Pods(namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("list pods %s in %s: %v", selector, namespace, err)
	}
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = selector
		return pods.Watch(ctx, o)
	}}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, lw)
	if err != nil {
		t.Fatalf("watch pods %s in %s: %v", selector, namespace, err)
	}
	for i := range list.Items {
		pw.pods[list.Items[i].Name] = &list.Items[i]
	}
	pw.fewest, pw.worst = pw.count()
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				pw.mu.Lock()
				pw.err = fmt.Errorf("watch of pods %s in %s: %v", selector, namespace, ev.Object)
				pw.mu.Unlock()
				return
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			pw.see(ev.Type, p, selector)
		}
	}()
	return pw
}

func (pw *PodWatcher) see(typ watch.EventType, p *corev1.Pod, selector string) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.stopped {
		return
	}
	if typ == watch.Deleted {
		delete(pw.pods, p.Name)
	} else {
		pw.pods[p.Name] = p
	}
	pw.moments++
	n, moment := pw.count()
	if n < pw.fewest {
		pw.fewest, pw.worst = n, moment
	}
	if pw.floor > 0 && n < pw.floor {
		pw.t.Errorf("PodDisruptionBudget broken for pods %s: %d healthy, at least %d wanted: %s", selector, n, pw.floor, moment)
	}
}

// count is how many pods are healthy now, and a description of every pod's
// state for a report.
func (pw *PodWatcher) count() (int, string) {
	n := 0
	var states []string
	for name, p := range pw.pods {
		state := "not Ready"
		switch {
		case p.DeletionTimestamp != nil:
			state = "terminating"
		case Healthy(p):
			state = "Ready"
			n++
		}
		states = append(states, fmt.Sprintf("%s on %q %s", name, p.Spec.NodeName, state))
	}
	slices.Sort(states)
	return n, fmt.Sprintf("%d healthy at %s: %s", n, time.Now().Format(time.TimeOnly), strings.Join(states, ", "))
}

// FailBelow makes the watcher fail the test the moment fewer than floor
// pods are healthy.
func (pw *PodWatcher) FailBelow(floor int) *PodWatcher {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.floor = floor
	return pw
}

// Fewest returns the fewest healthy pods at any one moment since the
// watcher started, that moment's pods, and how many changes it saw. err
// says why the watch ended early, if it did: the count after it is
// unknown.
func (pw *PodWatcher) Fewest() (fewest int, worst string, moments int, err error) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.fewest, pw.worst, pw.moments, pw.err
}
