package sim

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kmaint/kmaint/operator/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/test/gen"
)

// TestConcurrentDrainsAreNotRefusedByStaleBudgets drains a quarter of a
// realistic workload's nodes at once, as a pool with a large
// maxUnavailable does: 14 pods a node over 40 apps, each with a budget of
// 10%, drained by the operator's own drain steps. Pods with a grace period
// of 0 are gone as soon as they are evicted, so a budget that follows its
// pods always has room again a moment later, as a real one does once the
// pod's ReplicaSet has its replacement running. An eviction refused with
// 429 then only means the budget's status lagged its pods, and the drain
// waits for its next step. With the budgets of a namespace synced together,
// 80 of the 210 evictions here were refused (319 of 350 with 25 of 100
// nodes); synced one budget at a time, promptly, 0 to 3 are.
func TestConcurrentDrainsAreNotRefusedByStaleBudgets(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const ns, nodes, draining, perNode, apps = "concurrent-drains", 60, 15, 14, 40
	g.Expect(bed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	for a := range apps {
		app := fmt.Sprintf("svc-%02d", a)
		g.Expect(bed.Client.Create(ctx, &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MaxUnavailable: ptr.To(intstr.FromString("10%")),
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			},
		})).To(Succeed())
	}
	cs := kubernetes.NewForConfigOrDie(bed.Config)
	g.Expect(gen.FinishPodDeletions(ctx, cs)).To(Succeed())
	g.Expect(runDisruptionController(ctx, cs)).To(Succeed())

	var wg sync.WaitGroup
	slots := make(chan struct{}, startWorkers)
	for n := range nodes {
		node := fmt.Sprintf("concurrent-drains-%02d", n)
		for i := range perNode {
			// Each node runs its own run of consecutive apps, as the
			// realistic cluster's nodes do.
			app := fmt.Sprintf("svc-%02d", (n*perNode+i)%apps)
			wg.Add(1)
			slots <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				p := gen.Pod(ns, fmt.Sprintf("%s-%s", app, node), node, map[string]string{"app": app})
				p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
				shapeWorkloadPod(p, app, "10.250.0.1")
				if err := gen.CreatePod(ctx, bed.Client, p); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	g.Eventually(func(g Gomega) {
		list := &policyv1.PodDisruptionBudgetList{}
		g.Expect(bed.Client.List(ctx, list)).To(Succeed())
		healthy := 0
		for _, pdb := range list.Items {
			if pdb.Namespace == ns {
				healthy += int(pdb.Status.CurrentHealthy)
			}
		}
		g.Expect(healthy).To(Equal(nodes * perNode))
	}, time.Minute).Should(Succeed())

	evictions := &evictionLatencies{}
	drainer := &drain.Drainer{Client: kubernetes.NewForConfigOrDie(evictions.wrap(bed.Config))}
	var refused atomic.Int64
	took := make([]time.Duration, draining)
	start := time.Now()
	for n := range draining {
		node := fmt.Sprintf("concurrent-drains-%02d", n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Stepped as the operator steps a drain (the bench's
			// --drain-poll-interval=200ms), until it is done.
			// Off the test's goroutine, a failure is reported, not fatal.
			report := NewGomega(func(msg string, _ ...int) { t.Error(msg) })
			report.Eventually(func(g Gomega) {
				p, err := drainer.Step(ctx, node, v1alpha1.DrainOptions{})
				refused.Add(int64(len(p.Blockers)))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(p.Done).To(BeTrue())
			}, time.Minute, 200*time.Millisecond).Should(Succeed(), node)
			took[n] = time.Since(start)
		}()
	}
	wg.Wait()
	slices.Sort(took)
	lat := evictions.sorted()
	t.Logf("%d drains of %d pods at once: p50 %s, slowest %s; %d evictions, p50 %s, p90 %s, slowest %s; %d refused",
		draining, perNode, took[draining/2].Round(time.Millisecond), took[draining-1].Round(time.Millisecond),
		len(lat), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*9/10].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond), refused.Load())
	// A budget's room comes back within the controller's lag, a few
	// milliseconds; one refusal in twenty leaves room for a loaded machine.
	g.Expect(refused.Load()).To(BeNumerically("<=", draining*perNode/20), "evictions refused")
}

// evictionLatencies times the eviction requests that pass through it.
type evictionLatencies struct {
	mu    sync.Mutex
	times []time.Duration
}

func (l *evictionLatencies) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			start := time.Now()
			resp, err := rt.RoundTrip(r)
			if strings.HasSuffix(r.URL.Path, "/eviction") {
				l.mu.Lock()
				l.times = append(l.times, time.Since(start))
				l.mu.Unlock()
			}
			return resp, err
		})
	})
	return cfg
}

func (l *evictionLatencies) sorted() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := slices.Clone(l.times)
	slices.Sort(s)
	if len(s) == 0 {
		s = []time.Duration{0}
	}
	return s
}
