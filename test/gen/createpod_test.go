package gen_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/testbed"
)

// TestCreatePodNeverShowsANodeAPendingPod: what a drain lists on a node (its
// pods, by spec.nodeName) never holds a pod of ours Pending, which the
// eviction API would take past its budget. The pod arrives there Running
// and Ready; a mirror pod, which the API server wants on its node from the
// start, is created there. Both come back naming their node.
func TestCreatePodNeverShowsANodeAPendingPod(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bed, err := testbed.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = bed.Stop() })

	cs, err := kubernetes.NewForConfig(bed.Config)
	g.Expect(err).NotTo(HaveOccurred())
	w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n1"})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(w.Stop)

	pod := gen.Pod("default", "web", "n1", map[string]string{"app": "web"})
	mirror := gen.Pod("default", "static", "n1", map[string]string{"app": "static"})
	mirror.OwnerReferences = nil
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	for _, p := range []*corev1.Pod{pod, mirror} {
		g.Expect(gen.CreatePod(ctx, bed.Client, p)).To(Succeed())
		g.Expect(p.Spec.NodeName).To(Equal("n1"))
	}

	running := map[string]bool{}
	for len(running) < 2 {
		select {
		case ev, open := <-w.ResultChan():
			g.Expect(open).To(BeTrue(), "the node's watch ended with only %v seen Running", running)
			g.Expect(ev.Type).NotTo(Equal(watch.Error), "%v", ev.Object)
			p, ok := ev.Object.(*corev1.Pod)
			g.Expect(ok).To(BeTrue(), "the watch sent %T", ev.Object)
			if p.Name == mirror.Name && p.Status.Phase == corev1.PodPending {
				continue // created on its node; no drain evicts a mirror pod
			}
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "%s seen on its node as %s", p.Name, p.Status.Phase)
			running[p.Name] = true
		case <-time.After(time.Minute):
			t.Fatalf("the node's watch saw only %v Running", running)
		}
	}
}
