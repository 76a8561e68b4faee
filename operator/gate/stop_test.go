package gate_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/testbed"
)

// setStop creates or updates the cluster's MaintenanceGate, and deletes it
// when the test ends: every pool of the package's later tests would stop.
func setStop(t *testing.T, g Gomega, paused bool, reason string) {
	ctx := context.Background()
	mg := &v1alpha1.MaintenanceGate{}
	err := bed.Client.Get(ctx, client.ObjectKey{Name: v1alpha1.ClusterGateName}, mg)
	if err != nil {
		mg = &v1alpha1.MaintenanceGate{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClusterGateName},
			Spec: v1alpha1.MaintenanceGateSpec{Paused: paused, Reason: reason}}
		g.Expect(bed.Client.Create(ctx, mg)).To(Succeed())
		t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), mg) })
		return
	}
	mg.Spec.Paused, mg.Spec.Reason = paused, reason
	g.Expect(bed.Client.Update(ctx, mg)).To(Succeed())
}

// The cluster-wide stop: nothing new is admitted in two pools and the
// default pool, each says why, a node already draining finishes, and once
// lifted every waiting node reboots.
func TestClusterStopHoldsEveryPoolAndDrainingNodesFinish(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	harness.CreateNamespace(t, bed, "stop")
	createPool(t, gen.Pool("stop-a", intstr.FromInt32(1)))
	createPool(t, gen.Pool("stop-b", intstr.FromInt32(1)))
	a := createNodes(t, "stop-a", "stop-a", 2)
	b := createNodes(t, "stop-b", "stop-b", 1)
	def := createNodes(t, "stop-def", "stop-no-such-pool", 1) // in the default pool
	// a[0] drains slowly: its pod's budget allows no disruption yet.
	g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod("stop", "db-0", a[0], map[string]string{"app": "db"}))).To(Succeed())
	g.Expect(gen.PDB(ctx, bed.Client, "stop", "db", map[string]string{"app": "db"}, 0)).To(Succeed())
	daemonsA := runDaemons(t, "stop-a", false)
	daemonsB := runDaemons(t, "stop-b", false)
	daemonsDef := runDaemons(t, "stop-no-such-pool", false)
	startOperator(t)

	request(t, a[0], "stop-a0", time.Now().Add(-time.Minute))
	g.Eventually(func(g Gomega) map[string]string { return getNode(g, a[0]).Annotations }, timeout).Should(HaveKey(protocol.Admitted))

	reason := "incident 4711: freeze until the postmortem"
	setStop(t, g, true, reason)
	request(t, a[1], "stop-a1", time.Now())
	request(t, b[0], "stop-b0", time.Now())
	request(t, def[0], "stop-def0", time.Now())
	for _, pool := range []string{"stop-a", "stop-b"} {
		expectBlocked(g, pool, v1alpha1.ClusterPausedReason, reason, "kubectl kmaint resume --all")
		g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "MaintenancePool", pool, "Normal") }, timeout).
			Should(ContainElement(v1alpha1.ClusterPausedReason))
	}
	for _, n := range []string{a[1], b[0], def[0]} {
		expectWaiting(g, n, v1alpha1.ClusterPausedReason, reason)
	}

	// The node already draining finishes while the stop holds; its
	// completion reconciles its pool, which still admits no one.
	setPDBAllowed(g, "stop", "db", 1)
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, a[0], false) }, timeout).Should(Succeed())
	expectBlocked(g, "stop-a", v1alpha1.ClusterPausedReason)
	for _, n := range []string{a[1], b[0], def[0]} {
		g.Expect(getNode(g, n).Annotations).NotTo(HaveKey(protocol.Admitted), n)
	}
	g.Expect(daemonsA.Count(a[1]) + daemonsB.Count(b[0]) + daemonsDef.Count(def[0])).To(BeZero())

	setStop(t, g, false, reason)
	for _, n := range []string{a[1], b[0], def[0]} {
		g.Eventually(func(g Gomega) { expectRebootedOnce(g, n, false) }, timeout).Should(Succeed())
	}
}

// A MaintenanceGate that cannot be read stops every pool (fail closed) and
// says so on the pools and on itself; deleted, admissions resume.
func TestUnreadableClusterStopFailsClosed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createPool(t, gen.Pool("stop-bad", intstr.FromInt32(1)))
	node := createNodes(t, "stop-bad", "stop-bad", 1)[0]
	daemons := runDaemons(t, "stop-bad", false)
	broken := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"paused": map[string]any{"really": "yes"}}}}
	broken.SetGroupVersionKind(testbed.GVK("MaintenanceGate"))
	broken.SetName(v1alpha1.ClusterGateName)
	harness.CreateUnchecked(t, bed, broken, "maintenancegates.kmaint.io", "spec", "paused")
	startOperator(t)

	request(t, node, "stop-bad", time.Now())
	expectBlocked(g, "stop-bad", v1alpha1.UnreadableGateReason, "MaintenanceGate cluster cannot be read", "spec.paused")
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "MaintenancePool", "stop-bad", "Warning") }, timeout).
		Should(ContainElement(v1alpha1.UnreadableGateReason))
	g.Eventually(func(g Gomega) {
		mg := &unstructured.Unstructured{}
		mg.SetGroupVersionKind(testbed.GVK("MaintenanceGate"))
		g.Expect(bed.Client.Get(ctx, client.ObjectKey{Name: v1alpha1.ClusterGateName}, mg)).To(Succeed())
		conds, _, _ := unstructured.NestedSlice(mg.Object, "status", "conditions")
		g.Expect(conds).To(ContainElement(HaveKeyWithValue("type", v1alpha1.UnreadableCondition)))
	}, timeout).Should(Succeed())
	g.Expect(daemons.Count(node)).To(BeZero())
	g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.Admitted))

	g.Expect(bed.Client.Delete(ctx, broken)).To(Succeed())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, node, false) }, timeout).Should(Succeed())
	g.Expect(meta.FindStatusCondition(getPool(g, "stop-bad").Status.Conditions, v1alpha1.BlockedCondition).Status).
		To(Equal(metav1.ConditionFalse))
}
