package drain_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/test/gen"
)

// drainNode makes a namespace and a node of the same name, with a pod per
// name given.
func drainNode(t *testing.T, name string, pods ...string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(bed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(name))).To(Succeed())
	for _, p := range pods {
		g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod(name, p, name, nil))).To(Succeed())
	}
}

// A pod bound to the node by name after the drain's first List (the cordon
// keeps out only the scheduler's) is seen by the next step, from the
// watch.
func TestAPodBoundAfterTheFirstListIsSeenByTheNextStep(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	node := "drain-late"
	drainNode(t, node)
	d := &drain.Drainer{Client: kubernetes.NewForConfigOrDie(bed.Config)}
	pods := drain.NewNodePods(t.Context(), "")
	opts := v1alpha1.DrainOptions{GracePeriodSeconds: ptr.To[int64](0)}

	first, err := d.Step(ctx, node, opts, pods)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.Done).To(BeTrue(), "nothing on the node yet")

	g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod(node, "late", node, nil))).To(Succeed())
	g.Eventually(func(g Gomega) int {
		p, err := d.Step(ctx, node, opts, pods)
		g.Expect(err).NotTo(HaveOccurred())
		return p.Evicted
	}).Should(Equal(1), "the late pod is evicted")
	g.Eventually(func(g Gomega) bool {
		p, err := d.Step(ctx, node, opts, pods)
		g.Expect(err).NotTo(HaveOccurred())
		return p.Done
	}).Should(BeTrue())
}

// Gone tells when the pods a step left are gone, so that the drain is
// found done at once rather than at its next poll.
func TestGoneClosesWhenTheLastPodLeft(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	node := "drain-gone"
	drainNode(t, node, "a", "b")
	d := &drain.Drainer{Client: kubernetes.NewForConfigOrDie(bed.Config)}
	pods := drain.NewNodePods(t.Context(), "")
	g.Expect(pods.Gone()).To(BeNil(), "nothing to wait for before a step")

	p, err := d.Step(ctx, node, v1alpha1.DrainOptions{GracePeriodSeconds: ptr.To[int64](0)}, pods)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Evicted).To(Equal(2))
	gone := pods.Gone()
	g.Expect(gone).NotTo(BeNil())
	g.Eventually(gone).WithTimeout(30 * time.Second).Should(BeClosed())

	p, err = d.Step(ctx, node, v1alpha1.DrainOptions{}, pods)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Done).To(BeTrue(), "what the watch saw leave, the next step finds gone")
}

// refusedWatches answers every watch of pods with code (403 as an API
// server does for an operator whose role lacks the verb, 410 for a version
// too old to watch from), and counts them.
type refusedWatches struct {
	next    http.RoundTripper
	code    int
	watches *atomic.Int64
	lists   *atomic.Int64
}

func (r refusedWatches) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, "/pods") || req.URL.Query().Get("fieldSelector") == "" {
		return r.next.RoundTrip(req)
	}
	if req.URL.Query().Get("watch") != "true" {
		r.lists.Add(1)
		return r.next.RoundTrip(req)
	}
	r.watches.Add(1)
	reason := map[int]string{http.StatusForbidden: "Forbidden", http.StatusGone: "Expired"}[r.code]
	body := fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"refused","reason":%q,"code":%d}`, reason, r.code)
	return &http.Response{StatusCode: r.code, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// drainerWithWatchesAnswered is a Drainer whose watches of pods are all
// answered with code, and the counts of its watches and its Lists of a
// node's pods.
func drainerWithWatchesAnswered(code int) (d *drain.Drainer, watches, lists *atomic.Int64) {
	watches, lists = &atomic.Int64{}, &atomic.Int64{}
	cfg := rest.CopyConfig(bed.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return refusedWatches{next: rt, code: code, watches: watches, lists: lists}
	})
	return &drain.Drainer{Client: kubernetes.NewForConfigOrDie(cfg)}, watches, lists
}

// An operator whose role does not let it watch pods (a cluster role from
// before the watch) drains as it did before: listing at every step.
func TestADrainThatMayNotWatchListsAtEveryStep(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	node := "drain-nowatch"
	drainNode(t, node, "web")
	d, watches, lists := drainerWithWatchesAnswered(http.StatusForbidden)
	pods := drain.NewNodePods(t.Context(), "")
	opts := v1alpha1.DrainOptions{GracePeriodSeconds: ptr.To[int64](0)}

	p, err := d.Step(ctx, node, opts, pods)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Evicted).To(Equal(1))
	g.Eventually(watches.Load).Should(BeEquivalentTo(1))
	steps := int64(1)
	g.Eventually(func(g Gomega) bool {
		steps++
		p, err := d.Step(ctx, node, opts, pods)
		g.Expect(err).NotTo(HaveOccurred())
		return p.Done
	}).Should(BeTrue())
	g.Expect(watches.Load()).To(BeEquivalentTo(1), "a refused watch is not asked for again")
	g.Expect(lists.Load()).To(BeNumerically(">=", steps-1), "the steps after the refusal list")
}

// A watch that cannot start from the List's version (too old) is no
// refusal: each step lists, and tries to watch from its List again.
func TestADrainWhoseWatchCannotStartListsAtEveryStep(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	node := "drain-gonewatch"
	drainNode(t, node, "web")
	d, watches, lists := drainerWithWatchesAnswered(http.StatusGone)
	pods := drain.NewNodePods(t.Context(), "")
	opts := v1alpha1.DrainOptions{GracePeriodSeconds: ptr.To[int64](0)}

	steps := int64(0)
	g.Eventually(func(g Gomega) bool {
		steps++
		// One step at a time after the last one's watch ended, as the
		// poll interval spaces them.
		g.Eventually(watches.Load).Should(BeNumerically(">=", lists.Load()))
		p, err := d.Step(ctx, node, opts, pods)
		g.Expect(err).NotTo(HaveOccurred())
		return p.Done
	}).Should(BeTrue())
	g.Expect(lists.Load()).To(Equal(steps), "every step listed")
	g.Eventually(watches.Load).Should(Equal(steps), "and tried to watch again")
}

// The steps of a drain whose last pod goes are taken at once, not at the
// next poll: here an hour away.
func TestADrainIsFoundDoneTheMomentItsLastPodGoes(t *testing.T) {
	g := NewWithT(t)
	node := "drain-moment"
	drainNode(t, node, "a", "b", "c")
	d := &drain.Drainer{Client: kubernetes.NewForConfigOrDie(bed.Config)}
	s := drain.NewSteps(d, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Start(ctx, func(string) {})

	key := drain.KeyOf(node, "boot", time.Now())
	opts := v1alpha1.DrainOptions{GracePeriodSeconds: ptr.To[int64](0)}
	// The first step evicts the three pods; nothing but their going away
	// steps the drain again within the hour.
	g.Eventually(func() bool {
		last, _ := s.Follow(key, "pool", opts)
		return last.Progress.Done
	}).WithTimeout(30*time.Second).Should(BeTrue(), "stepped when the pods left, not an hour later")
	s.Stop(node)
}
