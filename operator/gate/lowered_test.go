package gate_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// Lowering maxUnavailable while nodes drain holds back the approvals the new
// budget does not allow: the drained nodes wait, cordoned, the pool says why,
// and they are approved one at a time as slots free up.
func TestLoweredBudgetHoldsApprovals(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// All three drain and none finishes until the pods' budget goes.
	nodes := drainsHeldByPodBudget(t, "lowered", 3)
	startOperator(t)
	for i, n := range nodes {
		request(t, n, "l"+n, time.Now().Add(time.Duration(i)*time.Second))
	}
	g.Eventually(func(g Gomega) {
		for _, n := range nodes {
			g.Expect(getNode(g, n).Annotations).To(HaveKey(protocol.Admitted), n)
		}
	}, timeout).Should(Succeed())

	harness.PatchPool(g, bed, "lowered", func(p *v1alpha1.MaintenancePool) {
		one := intstr.FromInt32(1)
		p.Spec.MaxUnavailable = &one
	})
	// The gate has seen the new budget before the drains can finish.
	g.Eventually(func(g Gomega) int32 { return getPool(g, "lowered").Status.MaxUnavailable }, timeout).Should(BeEquivalentTo(1))
	g.Expect(bed.Client.DeleteAllOf(ctx, &policyv1.PodDisruptionBudget{}, client.InNamespace("lowered"))).To(Succeed())

	// Never more than one approved at a time, until every node rebooted.
	approved := func(g Gomega) int {
		k := 0
		for _, n := range nodes {
			if _, ok := getNode(g, n).Annotations[protocol.RebootApproved]; ok {
				k++
			}
		}
		return k
	}
	// The first admitted is approved; the two others, drained, wait and the
	// pool says why. No daemon runs yet, so the approved node stays
	// approved while the test looks: with daemons that reboot at once the
	// state lasts a moment, and a busy machine's status write can miss it.
	g.Eventually(func(g Gomega) {
		g.Expect(approved(g)).To(Equal(1))
		c := meta.FindStatusCondition(getPool(g, "lowered").Status.Conditions, v1alpha1.DrainingCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring("its approval waits: 3 nodes count against a maxUnavailable of 1"))
		for _, n := range nodes[1:] {
			g.Expect(getNode(g, n).Spec.Unschedulable).To(BeTrue(), "%s waits cordoned", n)
		}
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) int { return approved(g) }, 2*time.Second).Should(Equal(1), "no second approval while the first node has not rebooted")
	daemons := runDaemons(t, "lowered", false)
	g.Eventually(func(g Gomega) {
		g.Expect(approved(g)).To(BeNumerically("<=", 1), "approvals within the lowered budget")
		for _, n := range nodes {
			g.Expect(daemons.Count(n)).To(Equal(1), "%s rebooted once", n)
		}
	}, 2*timeout).Should(Succeed())
	g.Expect(daemons.Order()).To(Equal(nodes), "approved in the order admitted")
}

// drainsHeldByPodBudget makes a namespace and a pool of maxUnavailable 3,
// both named name, with n nodes, each running a pod of one
// PodDisruptionBudget that forbids every eviction: a drain of them ends only
// when the test deletes the budget.
func drainsHeldByPodBudget(t *testing.T, name string, n int) []string {
	t.Helper()
	ctx := context.Background()
	harness.CreateNamespace(t, bed, name)
	createPool(t, gen.Pool(name, intstr.FromInt32(3)))
	nodes := createNodes(t, name, name, n)
	for _, node := range nodes {
		if err := gen.CreatePod(ctx, bed.Client, gen.Pod(name, "db-"+node, node, map[string]string{"app": "db"})); err != nil {
			t.Fatal(err)
		}
	}
	if err := gen.PDB(ctx, bed.Client, name, "db", map[string]string{"app": "db"}, 0); err != nil {
		t.Fatal(err)
	}
	return nodes
}
