package harness_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/testbed"
)

// recorder is a test that keeps the watcher's failures instead of failing,
// so that the test can check them.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) failures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errors...)
}

// TestPodWatcherSeesTheBudgetBroken: three Ready pods are counted from the
// start, not as the watch replays them (which would fall below the floor
// at once); an evicted (terminating) pod and a pod no longer Ready stop
// counting; the moment the healthy pods fall below the floor fails the
// test, and the watcher reports that worst moment.
func TestPodWatcherSeesTheBudgetBroken(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bed, err := testbed.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = bed.Stop() })

	const ns = "default"
	labels := map[string]string{"app": "web"}
	for i := range 3 {
		g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod(ns, fmt.Sprintf("web-%d", i), fmt.Sprintf("n%d", i), labels))).To(Succeed())
	}
	g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod(ns, "other", "n0", map[string]string{"app": "other"}))).To(Succeed())
	rec := &recorder{TB: t}
	w := harness.WatchHealthyPods(rec, bed, ns, "app=web").FailBelow(2)
	fewest, _, _, err := w.Fewest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fewest).To(Equal(3), "counted from the whole list")

	// An eviction: the pod terminates (no kubelet finishes it here).
	g.Expect(bed.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		fewest, worst, _, _ := w.Fewest()
		g.Expect(fewest).To(Equal(2))
		g.Expect(worst).To(ContainSubstring(`web-0 on "n0" terminating`))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(rec.failures()).To(BeEmpty(), "two healthy is the floor, not below it")

	// A pod on another node stops being Ready.
	var pod corev1.Pod
	g.Expect(bed.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-1"}, &pod)).To(Succeed())
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	g.Expect(bed.Client.Status().Update(ctx, &pod)).To(Succeed())
	g.Eventually(rec.failures, 30*time.Second, 100*time.Millisecond).Should(ContainElement(ContainSubstring("1 healthy, at least 2 wanted")))
	fewest, worst, moments, err := w.Fewest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fewest).To(Equal(1))
	g.Expect(worst).To(And(ContainSubstring(`web-1 on "n1" not Ready`), ContainSubstring(`web-2 on "n2" Ready`)))
	g.Expect(worst).NotTo(ContainSubstring("other"), "only the selected pods")
	g.Expect(moments).To(BeNumerically(">=", 2))
}
