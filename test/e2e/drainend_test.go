package e2e_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/metrics"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/sim"
)

// TestDrainDeadlineAndMarksOnSimulatedNodes: three pools of real daemons
// on journald nodes, each with a pod a PodDisruptionBudget keeps from
// moving. In the Retry pool the node is uncordoned at the deadline, its
// request waits saying which attempt comes next, the count survives an
// operator restart, and the node reboots once the blocker goes. In the
// Force pool the protected pod is deleted and the node reboots anyway, and
// the events, the metric and the NodeMaintenance say so. In both the
// marks are on the node during its drain and gone after the reboot, the
// node's own label untouched and the afterReboot label on.
func TestDrainDeadlineAndMarksOnSimulatedNodes(t *testing.T) {
	harness.RequireRoot(t)
	logStateOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	const (
		retryPool, forcePool = "e2e-retry", "e2e-force"
		lb                   = "node.kubernetes.io/exclude-from-external-load-balancers"
		own                  = "example.com/owner"
		after                = "example.com/rebooted"
		taint                = "example.com/rebooting"
	)
	c, err := sim.Start(ctx, bed, sim.Config{
		Pools: []sim.PoolSpec{
			{Name: retryPool, Nodes: 1, MaxUnavailable: intstr.FromInt32(1), DrainTimeout: 3 * time.Second},
			{Name: forcePool, Nodes: 1, MaxUnavailable: intstr.FromInt32(1), DrainTimeout: 3 * time.Second, OnDrainTimeout: v1alpha1.DrainForceAction},
		},
		Journal: sim.Journald,
		Timing:  sim.Timing{Reboot: time.Second, DaemonRebootTimeout: 10 * time.Second},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(c.Stop)
	retryNode, forceNode := retryPool+"-000", forcePool+"-000"
	marking := &v1alpha1.NodeMarking{
		DuringReboot: &v1alpha1.DuringRebootMarks{
			Labels: map[string]v1alpha1.MarkValue{lb: "true", own: "platform"},
			Taints: []v1alpha1.MarkTaint{{Key: taint, Effect: "PreferNoSchedule"}},
		},
		AfterReboot: &v1alpha1.AfterRebootMarks{Labels: map[string]v1alpha1.MarkValue{after: "yes"}},
	}
	harness.PatchPool(g, bed, retryPool, func(p *v1alpha1.MaintenancePool) {
		p.Spec.Drain.Retry = &v1alpha1.DrainRetry{MaxAttempts: 5, Backoff: &metav1.Duration{Duration: 3 * time.Second}}
		p.Spec.NodeMarking = marking
	})
	harness.PatchPool(g, bed, forcePool, func(p *v1alpha1.MaintenancePool) { p.Spec.NodeMarking = marking })
	for _, name := range []string{retryNode, forceNode} {
		n := getNode(g, name)
		base := n.DeepCopy()
		n.Labels[own] = "platform" // the node's own, with the value the marking sets
		g.Expect(bed.Client.Patch(ctx, n, client.MergeFrom(base))).To(Succeed())
		harness.CreateNamespace(t, bed, "ns-"+name)
		g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod("ns-"+name, "db-0", name, map[string]string{"app": "db"}))).To(Succeed())
		// The simulated disruption controller counts it: no disruption allowed.
		g.Expect(bed.Client.Create(ctx, &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns-" + name, Name: "db"},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		})).To(Succeed())
	}
	g.Expect(c.StartOperator()).To(Succeed())

	g.Expect(c.Node(retryNode).RequestReboot("kernel update")).To(Succeed())
	g.Expect(c.Node(forceNode).RequestReboot("kernel update")).To(Succeed())

	// Both are marked before their drain.
	for _, name := range []string{retryNode, forceNode} {
		g.Eventually(func(g Gomega) {
			n := getNode(g, name)
			g.Expect(n.Annotations).To(HaveKey(protocol.Admitted))
			g.Expect(n.Labels).To(HaveKeyWithValue(lb, "true"))
			g.Expect(n.Spec.Taints).To(ContainElement(corev1.Taint{Key: taint, Effect: corev1.TaintEffectPreferNoSchedule}))
		}, timeout).Should(Succeed())
	}

	// Retry: uncordoned, unmarked, waiting with the attempt and when.
	g.Eventually(func(g Gomega) {
		n := getNode(g, retryNode)
		g.Expect(n.Spec.Unschedulable).To(BeFalse())
		g.Expect(n.Labels).NotTo(HaveKey(lb))
		g.Expect(n.Labels).To(HaveKeyWithValue(own, "platform"))
		nms := harness.MaintenancesOf(g, bed, retryNode)
		g.Expect(nms).To(HaveLen(1))
		w := meta.FindStatusCondition(nms[0].Status.Conditions, v1alpha1.WaitingCondition)
		g.Expect(w).NotTo(BeNil())
		g.Expect(w.Reason).To(Equal(v1alpha1.DrainRetryBackoffReason))
		g.Expect(w.Message).To(ContainSubstring("of 5 not before"))
	}, timeout).Should(Succeed())

	// The operator restarts between attempts: the count goes on.
	var before protocol.DrainRetrying
	g.Eventually(func(g Gomega) {
		st, err := protocol.Read(getNode(g, retryNode))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.DrainRetry).NotTo(BeNil())
		before = *st.DrainRetry
	}, timeout).Should(Succeed())
	g.Expect(c.StopOperator()).To(Succeed())
	g.Expect(c.StartOperator()).To(Succeed())
	// The next record written counts on from the node's, not from one.
	g.Eventually(func(g Gomega) {
		st, err := protocol.Read(getNode(g, retryNode))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.DrainRetry).NotTo(BeNil(), "abandoned before the next retry was seen")
		g.Expect(st.DrainRetry.NextAt).NotTo(Equal(before.NextAt))
		g.Expect(st.DrainRetry.Attempts).To(Equal(before.Attempts + 1))
	}, timeout, 10*time.Millisecond).Should(Succeed())

	// The blocker goes: the next attempt drains and the node reboots.
	g.Expect(bed.Client.Delete(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-" + retryNode, Name: "db"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		harness.ExpectSettled(g, bed, retryNode, false)
		g.Expect(harness.MaintenancesOf(g, bed, retryNode)).To(ConsistOf(HaveField("Status.Phase", v1alpha1.PhaseSucceeded)))
		expectUnmarked(g, retryNode)
	}, timeout).Should(Succeed())
	g.Expect(c.Node(retryNode).Reboots()).To(Equal(1))
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "Node", retryNode, "Warning") }, timeout).
		Should(ContainElement(v1alpha1.DrainRetryScheduledReason))
	g.Expect(harness.EventReasons(g, bed, "Node", retryNode, "Warning")).NotTo(ContainElement(v1alpha1.DrainFailedEventReason))

	// Force: the protected pod is deleted, the node rebooted, and everyone
	// told.
	g.Eventually(func(g Gomega) {
		harness.ExpectSettled(g, bed, forceNode, false)
		err := bed.Client.Get(ctx, types.NamespacedName{Namespace: "ns-" + forceNode, Name: "db-0"}, &corev1.Pod{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the protected pod is deleted")
		nms := harness.MaintenancesOf(g, bed, forceNode)
		g.Expect(nms).To(HaveLen(1))
		g.Expect(nms[0].Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		f := meta.FindStatusCondition(nms[0].Status.Conditions, v1alpha1.DrainForcedCondition)
		g.Expect(f).NotTo(BeNil())
		g.Expect(f.Message).To(ContainSubstring("ns-" + forceNode + "/db-0"))
		g.Expect(harness.EventReasons(g, bed, "NodeMaintenance", nms[0].Name, "Warning")).To(ContainElement(v1alpha1.DrainForcedReason))
		g.Expect(harness.EventReasons(g, bed, "Node", forceNode, "Warning")).To(ContainElement(v1alpha1.DrainForcedReason))
		g.Expect(harness.EventReasons(g, bed, "MaintenancePool", forcePool, "Warning")).To(ContainElement(v1alpha1.DrainForcedReason))
		g.Expect(counter(g, metrics.DrainsForcedTotal, forcePool)).To(BeNumerically(">=", 1))
		g.Expect(counter(g, metrics.DrainForcedPodsTotal, forcePool)).To(BeNumerically(">=", 1))
		expectUnmarked(g, forceNode)
	}, timeout).Should(Succeed())
	g.Expect(c.Node(forceNode).Reboots()).To(Equal(1))
}

// expectUnmarked asserts kmaint's marks are gone from a node whose reboot
// completed, the node's own label kept and the afterReboot label on.
func expectUnmarked(g Gomega, name string) {
	n := getNode(g, name)
	g.Expect(n.Labels).NotTo(HaveKey("node.kubernetes.io/exclude-from-external-load-balancers"))
	g.Expect(n.Labels).To(HaveKeyWithValue("example.com/owner", "platform"), "the node's own label stays")
	g.Expect(n.Labels).To(HaveKeyWithValue("example.com/rebooted", "yes"))
	for _, t := range n.Spec.Taints {
		g.Expect(t.Key).NotTo(Equal("example.com/rebooting"))
	}
}

// counter reads an operator counter of a pool from the registry the
// operator exports.
func counter(g Gomega, name, pool string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "pool" && l.GetValue() == pool {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
