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
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// A pool's budget lowered while the operator's watch of the pools delivers
// nothing (as after the API server was away, until the informer's backoff
// ends) reaches the API server and not the cache: the gate, whose Node
// watch still works, sees requests and a stale budget of 3. It admits
// nothing until the cache has the budget of 1, says why, and then admits one
// node.
func TestAdmissionsWaitForTheCacheToHoldTheAPIServersBudget(t *testing.T) {
	g := NewWithT(t)
	createPool(t, gen.Pool("behind", intstr.FromInt32(3)))
	nodes := createNodes(t, "behind", "behind", 3)
	budget := watchBudget(t, "behind")

	poolWatches := harness.StartOperatorStalling(t, bed, "/maintenancepools", operator.Options{})
	g.Eventually(func(g Gomega) int32 { return getPool(g, "behind").Status.MaxUnavailable }, timeout).Should(BeEquivalentTo(3))

	poolWatches.Stall()
	harness.PatchPool(g, bed, "behind", func(p *v1alpha1.MaintenancePool) {
		one := intstr.FromInt32(1)
		p.Spec.MaxUnavailable = &one
	})
	for _, n := range nodes {
		request(t, n, "b"+n, time.Now())
	}
	admitted := func(g Gomega) int { return annotated(g, nodes, protocol.Admitted) }
	g.Eventually(func(g Gomega) {
		g.Expect(admitted(g)).To(BeZero(), "nothing admitted from the stale budget")
		c := meta.FindStatusCondition(getPool(g, "behind").Status.Conditions, v1alpha1.BlockedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(v1alpha1.CacheBehindReason))
		g.Expect(c.Message).To(ContainSubstring("MaintenancePool behind's spec changed at the API server (generation 2), and the operator's cache has generation 1"))
	}, timeout).Should(Succeed())
	g.Expect(admitted(g)).To(BeZero())

	poolWatches.Release()
	g.Eventually(admitted, timeout).Should(Equal(1))
	g.Consistently(admitted, 2*time.Second).Should(Equal(1), "the budget of 1 holds the others")
	most, _ := budget.MostUnavailable()
	g.Expect(most).To(Equal(1))
	c := meta.FindStatusCondition(getPool(g, "behind").Status.Conditions, v1alpha1.BlockedCondition)
	g.Expect(c.Reason).To(Equal(v1alpha1.BudgetExhaustedReason))
}

// Drains that end while the pool's watch delivers nothing: the nodes
// admitted under a budget of 3, lowered to 1 since at the API server, are not
// approved from the stale budget; the drained nodes wait, and the pool says
// why, until the cache has the budget of 1, which approves one.
func TestApprovalsWaitForTheCacheToHoldTheAPIServersBudget(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// The drains end when the pods' budget goes.
	nodes := drainsHeldByPodBudget(t, "behindapp", 3)
	poolWatches := harness.StartOperatorStalling(t, bed, "/maintenancepools", operator.Options{})
	for i, n := range nodes {
		request(t, n, "ba"+n, time.Now().Add(time.Duration(i)*time.Second))
	}
	g.Eventually(func(g Gomega) int { return annotated(g, nodes, protocol.Admitted) }, timeout).Should(Equal(3))

	poolWatches.Stall()
	harness.PatchPool(g, bed, "behindapp", func(p *v1alpha1.MaintenancePool) {
		one := intstr.FromInt32(1)
		p.Spec.MaxUnavailable = &one
	})
	g.Expect(bed.Client.DeleteAllOf(ctx, &policyv1.PodDisruptionBudget{}, client.InNamespace("behindapp"))).To(Succeed())
	approved := func(g Gomega) int { return annotated(g, nodes, protocol.RebootApproved) }
	g.Eventually(func(g Gomega) {
		g.Expect(approved(g)).To(BeZero(), "nothing approved from the stale budget")
		c := meta.FindStatusCondition(getPool(g, "behindapp").Status.Conditions, v1alpha1.DrainingCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring("drained; its approval waits: MaintenancePool behindapp's spec changed at the API server"))
	}, timeout).Should(Succeed())
	g.Expect(approved(g)).To(BeZero())

	poolWatches.Release()
	g.Eventually(approved, timeout).Should(Equal(1))
	g.Consistently(approved, 2*time.Second).Should(Equal(1), "the budget of 1 holds the others' approvals")
}

// annotated counts the nodes that have the annotation.
func annotated(g Gomega, nodes []string, annotation string) int {
	k := 0
	for _, n := range nodes {
		if _, ok := getNode(g, n).Annotations[annotation]; ok {
			k++
		}
	}
	return k
}
