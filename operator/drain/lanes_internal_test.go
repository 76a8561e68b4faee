package drain

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func podOf(namespace, name, controller string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if controller != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: controller, Controller: ptr.To(true)}}
	}
	return p
}

// A workload's lane lets one eviction through at a time, other workloads
// and pods without a controller pass beside it, and a lane nobody holds or
// waits for is dropped, so that the operator's memory holds only the
// workloads of the drains under way.
func TestALaneLetsOneThroughAndIsDroppedWhenUnused(t *testing.T) {
	g := NewWithT(t)
	var w workloadLanes
	stopped, stop := context.WithCancel(context.Background())
	stop()

	leaveA1, err := w.enter(context.Background(), podOf("shop", "a-1", "a"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = w.enter(stopped, podOf("shop", "a-2", "a"))
	g.Expect(err).To(MatchError(ContainSubstring("wait for the eviction of another pod of ReplicaSet shop/a (apps/v1): context canceled")),
		"a's second eviction waits while its first is in flight")

	leaveB, err := w.enter(stopped, podOf("shop", "b-1", "b"))
	g.Expect(err).NotTo(HaveOccurred(), "another workload does not wait for a")
	leaveOther, err := w.enter(stopped, podOf("other", "a-1", "a"))
	g.Expect(err).NotTo(HaveOccurred(), "a workload of the same name in another namespace does not wait")
	for range 2 {
		leave, err := w.enter(stopped, podOf("shop", "bare", ""))
		g.Expect(err).NotTo(HaveOccurred(), "a pod without a controller has no lane")
		defer leave()
	}

	leaveA1()
	leaveA2, err := w.enter(context.Background(), podOf("shop", "a-2", "a"))
	g.Expect(err).NotTo(HaveOccurred(), "a's next eviction goes once its first left")
	leaveA2()
	leaveB()
	leaveOther()
	g.Expect(w.lanes).To(BeEmpty(), "no lane is kept once no eviction holds or waits for it, a wait given up included")
}
