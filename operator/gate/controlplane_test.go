package gate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// controlPlanePool makes a control-plane pool of three nodes, each with an
// etcd member's static pod in namespace ns, Ready, and the operator with a
// short look-again interval (the guard reads the members, it does not
// watch them).
func controlPlanePool(t *testing.T, name string) (nodes []string, ns string) {
	g := NewWithT(t)
	ns = name + "-etcd"
	harness.CreateNamespace(t, bed, ns)
	pool := gen.Pool(name, intstr.FromInt32(3))
	pool.Spec.ControlPlane = &v1alpha1.ControlPlaneGuard{EtcdNamespace: ns}
	createPool(t, pool)
	nodes = createNodes(t, name, name, 3)
	for _, n := range nodes {
		p := gen.Pod(ns, "etcd-"+n, n, map[string]string{"component": "etcd"})
		p.OwnerReferences = nil
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "static"}
		g.Expect(gen.CreatePod(context.Background(), bed.Client, p)).To(Succeed())
	}
	harness.WatchBudget(t, bed, name).FailAbove(1)
	harness.StartOperatorWith(t, bed, operator.Options{BlockingQueryInterval: time.Second})
	return nodes, ns
}

// setEtcdReady sets the Ready condition of the etcd member on node.
func setEtcdReady(g Gomega, ns, node string, ready bool) {
	ctx := context.Background()
	var p corev1.Pod
	g.Expect(bed.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "etcd-" + node}, &p)).To(Succeed())
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	g.Expect(bed.Client.Status().Update(ctx, &p)).To(Succeed())
}

func expectQuorumAtRisk(g Gomega, pool string, says ...string) {
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPool(g, pool).Status.Conditions, v1alpha1.BlockedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(v1alpha1.QuorumAtRiskReason))
		for _, s := range says {
			g.Expect(c.Message).To(ContainSubstring(s))
		}
	}, timeout).Should(Succeed())
}

// A control-plane pool admits nothing while an etcd member on another node
// is not Ready, and says why; once it is, its nodes go one at a time
// though maxUnavailable is 3 (the budget watcher fails the test above 1).
func TestAControlPlanePoolHoldsWhileAnEtcdMemberIsUnhealthyAndGoesOneAtATime(t *testing.T) {
	g := NewWithT(t)
	nodes, ns := controlPlanePool(t, "cp-hold")
	daemons := runDaemons(t, "cp-hold", false)
	setEtcdReady(g, ns, nodes[2], false)
	request(t, nodes[0], "a", time.Now())
	request(t, nodes[1], "b", time.Now())
	expectQuorumAtRisk(g, "cp-hold", "etcd-"+nodes[2])
	expectWaiting(g, nodes[0], v1alpha1.QuorumAtRiskReason, "etcd-"+nodes[2])
	g.Consistently(func(g Gomega) {
		for _, n := range nodes[:2] {
			g.Expect(getNode(g, n).Annotations).NotTo(HaveKey(protocol.Admitted), "nothing admitted while quorum is at risk")
		}
	}, 3*time.Second).Should(Succeed())
	g.Expect(getPool(g, "cp-hold").Status.MaxUnavailable).To(BeEquivalentTo(1), "one at a time, whatever maxUnavailable says")

	setEtcdReady(g, ns, nodes[2], true)
	g.Eventually(daemons.Order, 2*timeout).Should(ConsistOf(nodes[0], nodes[1]))
	for _, n := range nodes[:2] {
		g.Eventually(func(g Gomega) { expectRebootedOnce(g, n, false) }, timeout).Should(Succeed())
	}
}

// Another control-plane node down outside kmaint's maintenance (cordoned
// by a person) holds the pool with reason QuorumAtRisk, naming it; once
// it is back the requests go.
func TestAControlPlanePoolHoldsWhileAnotherNodeIsDown(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	nodes, _ := controlPlanePool(t, "cp-down")
	runDaemons(t, "cp-down", false)
	n := getNode(g, nodes[2])
	base := n.DeepCopy()
	n.Spec.Unschedulable = true
	g.Expect(bed.Client.Patch(ctx, n, client.MergeFrom(base))).To(Succeed())
	request(t, nodes[0], "a", time.Now())
	expectQuorumAtRisk(g, "cp-down", nodes[2]+" (cordoned)")
	g.Expect(getNode(g, nodes[0]).Annotations).NotTo(HaveKey(protocol.Admitted))

	n = getNode(g, nodes[2])
	base = n.DeepCopy()
	n.Spec.Unschedulable = false
	g.Expect(bed.Client.Patch(ctx, n, client.MergeFrom(base))).To(Succeed())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[0], false) }, timeout).Should(Succeed())
}

// The guard is asked again before the approval: a node admitted while etcd
// was healthy, drained after a member went unhealthy, waits drained for
// its approval, saying why, and is approved once the member is Ready.
func TestAControlPlaneApprovalWaitsForQuorum(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	nodes, ns := controlPlanePool(t, "cp-approve")
	// A pod its budget keeps on the node holds the drain until the test
	// lets it go.
	g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod(ns, "db-0", nodes[0], map[string]string{"app": "db"}))).To(Succeed())
	g.Expect(gen.PDB(ctx, bed.Client, ns, "db", map[string]string{"app": "db"}, 0)).To(Succeed())
	daemons := runDaemons(t, "cp-approve", false)
	request(t, nodes[0], "a", time.Now())
	g.Eventually(func(g Gomega) {
		g.Expect(getNode(g, nodes[0]).Annotations).To(HaveKey(protocol.Admitted))
	}, timeout).Should(Succeed())

	setEtcdReady(g, ns, nodes[1], false)
	var pdb policyv1.PodDisruptionBudget
	g.Expect(bed.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, &pdb)).To(Succeed())
	pdb.Status.DisruptionsAllowed, pdb.Status.CurrentHealthy, pdb.Status.ExpectedPods = 1, 2, 2
	g.Expect(bed.Client.Status().Update(ctx, &pdb)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPool(g, "cp-approve").Status.Conditions, v1alpha1.DrainingCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring("its approval waits"))
		g.Expect(c.Message).To(ContainSubstring(fmt.Sprintf("etcd-%s", nodes[1])))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getNode(g, nodes[0]).Annotations).NotTo(HaveKey(protocol.RebootApproved))
	}, 3*time.Second).Should(Succeed())

	setEtcdReady(g, ns, nodes[1], true)
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[0], false) }, timeout).Should(Succeed())
	g.Expect(daemons.Order()).To(Equal([]string{nodes[0]}))
}

// A control-plane pool whose etcd members cannot be found asks the API
// server whether its etcd is ready (envtest's is), and goes on.
func TestAControlPlanePoolWithoutEtcdPodsAsksTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	pool := gen.Pool("cp-external", intstr.FromInt32(1))
	pool.Spec.ControlPlane = &v1alpha1.ControlPlaneGuard{EtcdNamespace: "cp-external-none"}
	createPool(t, pool)
	node := createNodes(t, "cp-external", "cp-external", 1)[0]
	runDaemons(t, "cp-external", false)
	startOperator(t)
	request(t, node, "x", time.Now())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, node, false) }, timeout).Should(Succeed())
}
