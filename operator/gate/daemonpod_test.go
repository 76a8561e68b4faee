package gate_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// A node waits for its daemon, the wait written, and a failed daemon pod is
// still on it: the List of failed pods failed when the wait was written, or
// the operator died in between. The gate lists them again at the next
// reconcile of the wait and deletes the pod, rather than leave it to the
// DaemonSet controller's back-off, which can keep the daemon off the node
// for up to 15 minutes.
func TestAFailedListOfFailedDaemonPodsIsTriedAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const pool = "daemonless"
	t0 := time.Now().UTC().Truncate(time.Second)
	harness.CreateNamespace(t, bed, pool)
	createPool(t, gen.Pool(pool, intstr.FromInt32(1)))
	node := createNodes(t, pool, pool, 1, gen.BootID("boot-1"),
		gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h"), gen.Admitted("boot-0", t0, "h"), gen.Approved("boot-0"),
		gen.RebootUnconfirmed("boot-0", "boot-1", t0))[0]
	pod := gen.Pod(pool, "kmaint-daemon-x", node, map[string]string{"app.kubernetes.io/name": "kmaint-daemon"})
	g.Expect(gen.CreatePod(ctx, bed.Client, pod)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(bed.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		pod.Status.Phase = corev1.PodFailed
		g.Expect(bed.Client.Status().Update(ctx, pod)).To(Succeed())
	}, timeout).Should(Succeed())

	pods := &failingFailedPodLists{Reader: bed.Client, failures: 2}
	startGate(t, gateOptions{daemonPods: pods})
	g.Eventually(func(g Gomega) {
		err := bed.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the failed daemon pod is deleted, got %v", err)
	}, timeout).Should(Succeed())
	g.Expect(pods.calls()).To(Equal(3), "two failed Lists, then the one that found the pod")
	// The daemon has not confirmed: the node still waits for it.
	n := getNode(g, node)
	g.Expect(n.Annotations).To(HaveKey(protocol.RebootUnconfirmed))
	g.Expect(n.Annotations).To(HaveKeyWithValue(protocol.RebootApproved, "boot-0"))
	// Deleted once for this boot: nothing lists the node's failed pods
	// again while its wait goes on.
	annotateNode(g, node, "touched", ptr.To("again"))
	g.Consistently(pods.calls, 2*time.Second).Should(Equal(3))
}

// failingFailedPodLists fails the first failures Lists of failed pods.
type failingFailedPodLists struct {
	client.Reader
	mu       sync.Mutex
	failures int
	n        int
}

func (f *failingFailedPodLists) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	if o.FieldSelector != nil {
		if phase, ok := o.FieldSelector.RequiresExactMatch("status.phase"); ok && phase == string(corev1.PodFailed) {
			f.mu.Lock()
			f.n++
			fail := f.n <= f.failures
			f.mu.Unlock()
			if fail {
				return errors.New("the API server is overloaded (a test's)")
			}
		}
	}
	return f.Reader.List(ctx, list, opts...)
}

func (f *failingFailedPodLists) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}
