package drain_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/test/gen"
)

type countingTransport struct {
	next http.RoundTripper
	gets *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/daemonsets/") {
		c.gets.Add(1)
	}
	return c.next.RoundTrip(r)
}

// A drain steps many times while pods leave. Whether a DaemonSet pod's
// DaemonSet exists is asked once, not at every step; a pod whose DaemonSet
// is gone is an orphan at every step.
func TestStepAsksOnceWhetherADaemonSetExists(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var gets atomic.Int64
	cfg := rest.CopyConfig(bed.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, gets: &gets} })
	d := &drain.Drainer{Client: kubernetes.NewForConfigOrDie(cfg)}

	ns, node := "drain-ds", "drain-ds-node"
	g.Expect(bed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(node))).To(Succeed())
	g.Expect(gen.CreatePod(ctx, bed.Client, daemonSetPod(t, ns, node))).To(Succeed())
	orphan := gen.Pod(ns, "orphan", node, map[string]string{"app": "agent"})
	orphan.OwnerReferences[0].Kind, orphan.OwnerReferences[0].Name = "DaemonSet", "deleted-agent"
	g.Expect(gen.CreatePod(ctx, bed.Client, orphan)).To(Succeed())

	pods := drain.NewNodePods(t.Context(), "")
	for range 5 {
		p, err := d.Step(ctx, node, v1alpha1.DrainOptions{}, pods)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Done).To(BeFalse())
		g.Expect(p.Blockers).To(ContainElement(ContainSubstring("deleted-agent")), "the orphan blocks the drain (no force) at every step")
	}
	// One Get for the DaemonSet that exists, and one per step for the one
	// that does not.
	g.Expect(gets.Load()).To(BeEquivalentTo(1 + 5))
}
