package gate_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

// TestRebootSlowerThanTheDaemonsTimeoutIsNotDegraded: a daemon whose
// reboot took longer than its --reboot-timeout reported it degraded, and
// then the reboot happened. From the moment the node reports a new boot its
// pool no longer counts it degraded, though its daemon (slow to start on a
// loaded machine, or gone) has not rewritten its state yet: the degraded
// state was about the old boot. The node completes once its daemon confirms.
func TestRebootSlowerThanTheDaemonsTimeoutIsNotDegraded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createPool(t, gen.Pool("slowboot", intstr.FromInt32(1)))
	name := createNodes(t, "slowboot", "slowboot", 1)[0]
	startOperator(t)

	request(t, name, "h1", time.Now())
	g.Eventually(func(g Gomega) {
		g.Expect(getNode(g, name).Annotations).To(HaveKeyWithValue(protocol.RebootApproved, "boot-0"))
	}, timeout).Should(Succeed())
	// The daemon asked, and the boot outlived its timeout.
	daemonWrites(g, name, gen.DaemonState(protocol.DaemonDegraded, "boot-0", "asked to reboot; boot-0 still running 5s later", time.Now()))
	g.Eventually(func(g Gomega) {
		p := getPool(g, "slowboot")
		g.Expect(p.Status.Degraded).To(BeEquivalentTo(1))
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.DegradedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	}, timeout).Should(Succeed())

	// The reboot happens after all; the daemon of the new boot is not up yet.
	g.Expect(gen.SetBoot(ctx, bed.Client, name, "boot-1", true)).To(Succeed())
	g.Eventually(func(g Gomega) {
		p := getPool(g, "slowboot")
		g.Expect(p.Status.Degraded).To(BeZero(), "the node rebooted: not degraded")
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.DegradedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	}, timeout).Should(Succeed())
	n := getNode(g, name)
	g.Expect(n.Spec.Unschedulable).To(BeTrue(), "cordoned until its daemon confirms")
	g.Expect(n.Annotations).To(HaveKeyWithValue(protocol.RebootApproved, "boot-0"))

	// The daemon of the new boot comes up: no request, idle.
	daemonWrites(g, name, gen.Annotations(protocol.RebootRequested, ""), gen.DaemonState(protocol.DaemonIdle, "boot-1", "", time.Now()))
	g.Eventually(func(g Gomega) { expectSettled(g, name, false) }, timeout).Should(Succeed())
}

// daemonWrites applies the daemon's annotation writes to the node; an empty
// reboot-requested is removed, as the daemon clears it.
func daemonWrites(g Gomega, name string, opts ...gen.NodeOption) {
	n := getNode(g, name)
	base := n.DeepCopy()
	for _, o := range opts {
		o(n)
	}
	if n.Annotations[protocol.RebootRequested] == "" {
		delete(n.Annotations, protocol.RebootRequested)
	}
	g.Expect(bed.Client.Patch(context.Background(), n, client.MergeFrom(base))).To(Succeed())
}
