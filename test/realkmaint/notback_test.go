package realkmaint

import (
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/realcluster"
	"github.com/kmaint/kmaint/test/testbed"
)

// notBackPool is the pool of every node, one at a time, for the node that
// does not come back.
const notBackPool = "not-back"

// nodeNotBackFromReboot rolls a new config over a pool of every node with
// maxUnavailable 1, and the first node kmaint reboots does not come back:
// its machine stays down (realcluster's BootHold). The operator reports it
// once its --node-return-timeout has passed (the test install's values set
// it short): the NodeNotBack annotation, a Warning event on the node and
// the pool, the pool's and the NodeMaintenance's Degraded condition. Until
// then, and then still, the rollout stops at the budget: no other node is
// admitted, let alone rebooted. Once the machine boots again everything
// completes, the report clears, and the rollout goes on: every node
// rebooted exactly once.
func nodeNotBackFromReboot(t *testing.T, c *realcluster.Cluster, kc client.Client) {
	g := NewWithT(t)
	ctx := context.Background()
	bootsBefore := bootCounts(c)
	// Every node is held: whichever kmaint reboots first stays down, and the
	// others are released before their turn can come (the budget is one).
	holds := map[*realcluster.Node]*realcluster.BootHold{}
	for _, n := range c.Nodes() {
		h := n.HoldNextBoot()
		holds[n] = h
		t.Cleanup(h.Release)
	}
	poolOfEveryNode(t, c, kc, notBackPool)
	bed := &testbed.Bed{Config: c.RestConfig(), Client: kc, Scheme: kc.Scheme()}
	watcher := harness.WatchBudget(t, bed, notBackPool).FailAbove(1).ByAdmissions()

	began := time.Now()
	g.Expect(cmd.Rollout(ctx, kc, &bytes.Buffer{}, cmd.RolloutOptions{Pool: notBackPool, Config: "os-3"})).To(Succeed())
	var down *realcluster.Node
	g.Eventually(func() *realcluster.Node {
		for n, h := range holds {
			select {
			case <-h.Down():
				down = n
			default:
			}
		}
		return down
	}, 2*timeout, 100*time.Millisecond).ShouldNot(BeNil(), "a node rebooted and stays down")
	wentDown := time.Now()
	t.Logf("%s went down for its reboot %s into the rollout, and stays down", down.Name(), wentDown.Sub(began).Round(time.Second))
	var others []*realcluster.Node
	for n, h := range holds {
		if n != down {
			others = append(others, n)
			g.Expect(n.Boots()).To(Equal(bootsBefore[n.Name()]), "%s has not rebooted: one at a time", n.Name())
			h.Release()
		}
	}

	// The report. Once it is seen, the rollout has stood at its budget the
	// whole time the node was away: no other node admitted or rebooted.
	var open v1alpha1.NodeMaintenance
	g.Eventually(func(g Gomega) {
		var node corev1.Node
		g.Expect(kc.Get(ctx, client.ObjectKey{Name: down.Name()}, &node)).To(Succeed())
		g.Expect(node.Annotations).To(HaveKey(protocol.NodeNotBack))
		g.Expect(node.Annotations).To(HaveKey(protocol.RebootApproved), "still approved: it may come back")
		g.Expect(node.Spec.Unschedulable).To(BeTrue(), "still cordoned")
		g.Expect(harness.EventReasons(g, bed, "Node", down.Name(), corev1.EventTypeWarning)).To(ContainElement(v1alpha1.NodeNotBackReason))
		g.Expect(harness.EventReasons(g, bed, "MaintenancePool", notBackPool, corev1.EventTypeWarning)).To(ContainElement(v1alpha1.NodeNotBackReason))

		pool := harness.GetPool(g, bed, notBackPool)
		degraded := meta.FindStatusCondition(pool.Status.Conditions, v1alpha1.DegradedCondition)
		g.Expect(degraded).NotTo(BeNil())
		g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(degraded.Reason).To(Equal(v1alpha1.NodeNotBackReason))
		g.Expect(degraded.Message).To(ContainSubstring(down.Name() + ": not back"))
		g.Expect(pool.Status.Unavailable).To(BeEquivalentTo(1))
		blocked := meta.FindStatusCondition(pool.Status.Conditions, v1alpha1.BlockedCondition)
		g.Expect(blocked).NotTo(BeNil())
		g.Expect(blocked.Reason).To(Equal(v1alpha1.BudgetExhaustedReason), "the others wait for the slot")

		var nms v1alpha1.NodeMaintenanceList
		g.Expect(kc.List(ctx, &nms)).To(Succeed())
		var mine []v1alpha1.NodeMaintenance
		for _, nm := range nms.Items {
			if nm.Spec.NodeName == down.Name() && !nm.Status.Phase.Done() {
				mine = append(mine, nm)
			}
		}
		g.Expect(mine).To(HaveLen(1), "the rollout's request for %s is open", down.Name())
		open = mine[0]
		d := meta.FindStatusCondition(open.Status.Conditions, v1alpha1.DegradedCondition)
		g.Expect(d).NotTo(BeNil())
		g.Expect(d.Reason).To(Equal(v1alpha1.NodeNotBackReason))
	}, 2*timeout, time.Second).Should(Succeed())
	t.Logf("%s reported not back %s after it went down", down.Name(), time.Since(wentDown).Round(time.Second))
	for _, n := range others {
		var node corev1.Node
		g.Expect(kc.Get(ctx, client.ObjectKey{Name: n.Name()}, &node)).To(Succeed())
		g.Expect(node.Annotations).NotTo(HaveKey(protocol.Admitted), "%s not admitted while %s is down", n.Name(), down.Name())
		g.Expect(node.Annotations).NotTo(HaveKey(protocol.RebootApproved), n.Name())
		g.Expect(n.Boots()).To(Equal(bootsBefore[n.Name()]), "%s not rebooted while %s is down", n.Name(), down.Name())
	}

	// The machine comes back: its reboot completes, the report clears, and
	// the rollout goes on.
	holds[down].Release()
	for _, n := range c.Nodes() {
		g.Eventually(func(g Gomega) {
			node := settledNode(g, kc, n.Name())
			g.Expect(node.Annotations).To(HaveKeyWithValue(protocol.CurrentConfig, "os-3"), n.Name())
		}, 2*timeout, time.Second).Should(Succeed())
	}
	t.Logf("config os-3 rolled over %d real nodes in %s, one of them held down", len(c.Nodes()), time.Since(began).Round(time.Second))
	g.Eventually(func(g Gomega) {
		pool := harness.GetPool(g, bed, notBackPool)
		g.Expect(meta.IsStatusConditionFalse(pool.Status.Conditions, v1alpha1.DegradedCondition)).To(BeTrue(), "the report cleared")
		var nm v1alpha1.NodeMaintenance
		g.Expect(kc.Get(ctx, client.ObjectKeyFromObject(&open), &nm)).To(Succeed())
		g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		g.Expect(meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.DegradedCondition)).To(BeNil(), "the request's report cleared")
	}, timeout, time.Second).Should(Succeed())
	expectRebootedOnce(g, c, bootsBefore, c.Nodes()...)
	most, moments := watcher.MostUnavailable()
	g.Expect(most).To(Equal(1), "the watcher saw one node at a time unavailable (over %d changes)", moments)
}
