package drain_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/test/gen"
)

// evictionsInFlight watches the evictions a client sends: how many are in
// flight at once, in all and per workload (a pod's name up to its first
// "-"). It holds each eviction until three are in flight or holdFor
// passed, so that evictions sent together are in flight together.
type evictionsInFlight struct {
	next    http.RoundTripper
	holdFor time.Duration

	mu              sync.Mutex
	now             map[string]int
	all             int
	mostAll         int
	mostOneWorkload int
	arrived         chan struct{}
	crowd           sync.Once
}

func (e *evictionsInFlight) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/eviction") {
		return e.next.RoundTrip(r)
	}
	parts := strings.Split(r.URL.Path, "/")
	workload, _, _ := strings.Cut(parts[len(parts)-2], "-")
	e.mu.Lock()
	e.now[workload]++
	e.all++
	e.mostAll = max(e.mostAll, e.all)
	e.mostOneWorkload = max(e.mostOneWorkload, e.now[workload])
	crowded := e.all >= 3
	e.mu.Unlock()
	if crowded {
		e.crowd.Do(func() { close(e.arrived) })
	}
	select {
	case <-e.arrived:
	case <-time.After(e.holdFor):
	}
	defer func() {
		e.mu.Lock()
		e.now[workload]--
		e.all--
		e.mu.Unlock()
	}()
	return e.next.RoundTrip(r)
}

func (e *evictionsInFlight) most() (all, oneWorkload int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.mostAll, e.mostOneWorkload
}

// Evicting two pods under one PodDisruptionBudget at once makes the API
// server update the budget twice at once: one update conflicts, and its
// eviction sleeps half a second before it tries again. Drains of two nodes
// at once, each with a pod of workloads a and b, send a's evictions one
// after another, and b's, while a's and b's go in parallel.
func TestEvictionsOfOneWorkloadGoOneAtATime(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	watch := &evictionsInFlight{holdFor: time.Second, now: map[string]int{}, arrived: make(chan struct{})}
	cfg := rest.CopyConfig(bed.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { watch.next = rt; return watch })
	d := &drain.Drainer{Client: kubernetes.NewForConfigOrDie(cfg)}

	ns := "drain-lanes"
	nodes := []string{"drain-lanes-1", "drain-lanes-2"}
	g.Expect(bed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	for _, app := range []string{"a", "b"} {
		g.Expect(gen.PDB(ctx, bed.Client, ns, app, map[string]string{"app": app}, 2)).To(Succeed())
	}
	for i, node := range nodes {
		g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(node))).To(Succeed())
		for _, app := range []string{"a", "b"} {
			p := gen.Pod(ns, app+"-"+string(rune('1'+i)), node, map[string]string{"app": app})
			// The pods of a workload share their controller, a ReplicaSet.
			p.OwnerReferences[0].Name, p.OwnerReferences[0].UID = app+"-rs", types.UID("rs-"+app)
			g.Expect(gen.CreatePod(ctx, bed.Client, p)).To(Succeed())
		}
	}

	var wg sync.WaitGroup
	steps := make([]drain.Progress, len(nodes))
	errs := make([]error, len(nodes))
	for i, node := range nodes {
		wg.Go(func() {
			steps[i], errs[i] = d.Step(ctx, node, v1alpha1.DrainOptions{}, drain.NewNodePods(t.Context(), ""))
		})
	}
	wg.Wait()
	for i := range nodes {
		g.Expect(errs[i]).NotTo(HaveOccurred())
		g.Expect(steps[i].Evicted).To(Equal(2), "both pods of node %s are evicted, none refused", nodes[i])
		g.Expect(steps[i].Blockers).To(BeEmpty())
	}
	all, oneWorkload := watch.most()
	g.Expect(oneWorkload).To(Equal(1), "never two evictions of one workload's pods in flight at once")
	g.Expect(all).To(Equal(2), "the evictions of a's and b's pods go in parallel")

	for _, node := range nodes {
		g.Eventually(func(g Gomega) {
			p, err := d.Step(ctx, node, v1alpha1.DrainOptions{}, drain.NewNodePods(t.Context(), ""))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Done).To(BeTrue())
		}).WithTimeout(30 * time.Second).Should(Succeed())
	}
}

// A drain stopped while its eviction waits for another of the same
// workload gives up waiting, and says for what.
func TestAnEvictionWaitingForItsWorkloadStopsWithItsDrain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	release := make(chan struct{})
	held, listed := make(chan struct{}, 1), make(chan struct{}, 1)
	cfg := rest.CopyConfig(bed.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/eviction") && strings.Contains(r.URL.Path, "stuck-") {
				held <- struct{}{}
				<-release
			}
			resp, err := rt.RoundTrip(r)
			if r.Method == http.MethodGet && strings.Contains(r.URL.RawQuery, "drain-lanes-stop-2") {
				listed <- struct{}{}
			}
			return resp, err
		})
	})
	d := &drain.Drainer{Client: kubernetes.NewForConfigOrDie(cfg)}
	defer close(release)

	ns := "drain-lanes-stop"
	nodes := []string{"drain-lanes-stop-1", "drain-lanes-stop-2"}
	g.Expect(bed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	for i, node := range nodes {
		g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(node))).To(Succeed())
		name := []string{"stuck-1", "waiting-2"}[i]
		p := gen.Pod(ns, name, node, map[string]string{"app": "web"})
		p.OwnerReferences[0].Name, p.OwnerReferences[0].UID = "web-rs", "rs-web"
		g.Expect(gen.CreatePod(ctx, bed.Client, p)).To(Succeed())
	}

	// The first node's eviction is held in flight; the second's waits for it.
	go func() { _, _ = d.Step(ctx, nodes[0], v1alpha1.DrainOptions{}, drain.NewNodePods(t.Context(), "")) }()
	g.Eventually(held).WithTimeout(30 * time.Second).Should(Receive())
	stepCtx, stop := context.WithCancel(ctx)
	result := make(chan error, 1)
	go func() {
		_, err := d.Step(stepCtx, nodes[1], v1alpha1.DrainOptions{}, drain.NewNodePods(t.Context(), ""))
		result <- err
	}()
	// Stopped once it listed its node's pods: its eviction waits, or is
	// about to.
	g.Eventually(listed).WithTimeout(30 * time.Second).Should(Receive())
	stop()
	var err error
	g.Eventually(result).WithTimeout(30 * time.Second).Should(Receive(&err))
	g.Expect(err).To(MatchError(ContainSubstring("wait for the eviction of another pod of ReplicaSet drain-lanes-stop/web-rs (apps/v1): context canceled")))
	g.Expect(bed.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "waiting-2"}, &corev1.Pod{})).To(Succeed(), "its pod was not evicted")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
