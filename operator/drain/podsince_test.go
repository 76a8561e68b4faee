package drain_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
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
	"k8s.io/utils/ptr"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/test/gen"
)

// podLists records the query of every List of pods sent through it.
type podLists struct {
	next    http.RoundTripper
	mu      *sync.Mutex
	queries *[]url.Values
}

func (p podLists) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pods") {
		p.mu.Lock()
		*p.queries = append(*p.queries, r.URL.Query())
		p.mu.Unlock()
	}
	return p.next.RoundTrip(r)
}

// A List of a node's pods without a resourceVersion is a consistent read:
// when the API server's watch cache lags, it reads every pod of the cluster
// from etcd. A drain makes one consistent read, of a single pod, lists the
// node's pods once from the watch cache, no older than what that read saw,
// and watches them from that List's version: its later steps list nothing.
func TestADrainListsItsNodesPodsOnceFromTheWatchCache(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var mu sync.Mutex
	var queries []url.Values
	cfg := rest.CopyConfig(bed.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return podLists{next: rt, mu: &mu, queries: &queries} })
	d := &drain.Drainer{Client: kubernetes.NewForConfigOrDie(cfg)}

	ns, node := "drain-cache", "drain-cache-node"
	g.Expect(bed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(node))).To(Succeed())
	g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod(ns, "web", node, nil))).To(Succeed())
	opts := v1alpha1.DrainOptions{GracePeriodSeconds: ptr.To[int64](0)}

	pods := drain.NewNodePods(t.Context(), "")
	first, err := d.Step(ctx, node, opts, pods)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.Evicted).To(Equal(1), "the pod bound before the drain began is seen at its first step")
	since := pods.Since()
	g.Expect(since).NotTo(BeEmpty())
	steps := 0
	g.Eventually(func(g Gomega) bool {
		steps++
		p, err := d.Step(ctx, node, opts, pods)
		g.Expect(err).NotTo(HaveOccurred())
		return p.Done
	}).Should(BeTrue())
	g.Expect(pods.Since()).To(Equal(since))
	g.Expect(bed.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, &corev1.Pod{})).NotTo(Succeed(), "the pod was evicted")

	mu.Lock()
	defer mu.Unlock()
	consistent, ofNode, watches := 0, 0, 0
	for _, q := range queries {
		switch {
		case q.Get("watch") == "true":
			watches++
			g.Expect(q.Get("fieldSelector")).To(Equal("spec.nodeName="+node), "%v", q)
		case q.Get("resourceVersion") == "":
			consistent++
			g.Expect(q.Get("limit")).To(Equal("1"), "a consistent read reads one pod: %v", q)
			g.Expect(q.Get("fieldSelector")).To(BeEmpty(), "a consistent read reads one pod: %v", q)
		default:
			ofNode++
			g.Expect(q.Get("fieldSelector")).To(Equal("spec.nodeName="+node), "%v", q)
			g.Expect(q.Get("resourceVersion")).To(Equal(since), "%v", q)
			g.Expect(q.Get("resourceVersionMatch")).To(Equal(string(metav1.ResourceVersionMatchNotOlderThan)), "%v", q)
		}
	}
	g.Expect(consistent).To(Equal(1), "one consistent read for the whole drain")
	g.Expect(ofNode).To(Equal(1), "the node's pods listed once in %d steps", steps+1)
	g.Expect(watches).To(Equal(1), "and watched since")
}

// A step given a version its API server cannot serve (the watch cache has
// not reached it, or it is no version at all) fails: it neither reports the
// node drained nor evicts anything. (The API server answers a version
// ahead of its cache after a few seconds, and client-go asks again while it
// is told to: the step waits at most its timeout, drainStepTimeout in the
// gate, ten seconds here.)
func TestAStepOnAVersionTheCacheCannotServeFails(t *testing.T) {
	ctx := context.Background()
	d := &drain.Drainer{Client: kubernetes.NewForConfigOrDie(bed.Config)}
	ns, node := "drain-ahead", "drain-ahead-node"
	if err := bed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := gen.CreateNode(ctx, bed.Client, gen.Node(node)); err != nil {
		t.Fatal(err)
	}
	if err := gen.CreatePod(ctx, bed.Client, gen.Pod(ns, "web", node, nil)); err != nil {
		t.Fatal(err)
	}
	now, err := drain.PodsVersion(ctx, d.Client)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := strconv.ParseUint(now, 10, 64)
	if err != nil {
		t.Fatalf("resource version %q: %v", now, err)
	}
	for name, since := range map[string]string{
		"ahead of the cache": strconv.FormatUint(rv+1_000_000, 10),
		"not a version":      "yesterday",
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			stepCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			p, err := d.Step(stepCtx, node, v1alpha1.DrainOptions{GracePeriodSeconds: ptr.To[int64](0)}, drain.NewNodePods(stepCtx, since))
			g.Expect(err).To(HaveOccurred())
			g.Expect(p.Done).To(BeFalse())
			g.Expect(p.Evicted).To(BeZero())
			g.Expect(bed.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, &corev1.Pod{})).To(Succeed(), "nothing was evicted")
		})
	}
}
