package gate_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// A reboot-approved annotation the gate did not write ("garbage" by hand,
// on a node kmaint cordoned, Ready in its boot) is not taken for a reboot
// that completed: no RebootCompleted event, the node stays as it is, and the
// pool says which annotation is wrong. Removed, the node is released.
func TestHandWrittenApprovalIsNeverTakenForAReboot(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createPool(t, gen.Pool("handwritten", intstr.FromInt32(1)))
	node := createNodes(t, "handwritten", "handwritten", 1)[0]
	n := getNode(g, node)
	base := n.DeepCopy()
	n.Spec.Unschedulable = true
	n.Annotations = map[string]string{protocol.RebootApproved: "garbage", protocol.Cordoned: "true"}
	g.Expect(bed.Client.Patch(ctx, n, client.MergeFrom(base))).To(Succeed())
	startOperator(t)

	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPool(g, "handwritten").Status.Conditions, v1alpha1.DegradedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(v1alpha1.MalformedAnnotationReason))
		g.Expect(c.Message).To(ContainSubstring(`annotation kmaint.io/reboot-approved on node ` + node + ` is "garbage", but the node has no kmaint.io/admitted annotation`))
		g.Expect(harness.EventReasons(g, bed, "Node", node, "Warning")).To(ContainElement(v1alpha1.MalformedAnnotationReason))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		n := getNode(g, node)
		g.Expect(n.Spec.Unschedulable).To(BeTrue(), "not uncordoned")
		g.Expect(n.Annotations).To(HaveKeyWithValue(protocol.RebootApproved, "garbage"), "not completed")
		g.Expect(harness.EventReasons(g, bed, "Node", node, "")).NotTo(ContainElement("RebootCompleted"))
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	// A person removes what they wrote: the pool is no longer degraded.
	n = getNode(g, node)
	base = n.DeepCopy()
	delete(n.Annotations, protocol.RebootApproved)
	g.Expect(bed.Client.Patch(ctx, n, client.MergeFrom(base))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(meta.IsStatusConditionTrue(getPool(g, "handwritten").Status.Conditions, v1alpha1.DegradedCondition)).To(BeFalse())
	}, timeout).Should(Succeed())
	g.Expect(harness.EventReasons(g, bed, "Node", node, "")).NotTo(ContainElement("RebootCompleted"))
}
