package gate_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// A pool whose selector cannot be parsed (stored before the schema refused
// such selectors) fails closed: the nodes it might select are admitted by no
// pool (before, they fell into the default pool and were rebooted three at a
// time under its budget), every pool concerned says why, and so does each
// waiting request. A pool it cannot select goes on as before. Once the
// selector is fixed, its nodes reboot within its budget.
func TestStoredInvalidSelectorKeepsItsNodesOutOfEveryPool(t *testing.T) {
	g := NewWithT(t)
	broken := gen.Pool("unparsable", intstr.FromInt32(1))
	// The selector: an operator the API does not know.
	broken.Spec.NodeSelector.MatchExpressions = []v1alpha1.LabelSelectorRequirement{
		{Key: "zone", Operator: "Equals", Values: []v1alpha1.SelectorValue{"a"}},
	}
	harness.CreateUnchecked(t, bed, broken, "maintenancepools.kmaint.io", "spec", "nodeSelector")
	// Its nodes would be in the default pool, which a MaintenancePool
	// configures here so that its status can be read (and 3 at once would
	// be allowed).
	createDefault(t, 3)
	nodes := createNodes(t, "unparsable", "unparsable", 3, gen.Labels("zone", "a"))
	createPool(t, gen.Pool("bystander", intstr.FromInt32(1)))
	bystander := createNodes(t, "bystander", "bystander", 1)[0]
	runDaemons(t, "bystander", false)
	startOperator(t)
	for i, n := range append(nodes, bystander) {
		request(t, n, fmt.Sprintf("u%d", i), time.Now().Add(time.Duration(i)*time.Second))
	}

	// The pool says its selector cannot be parsed, naming the field and the
	// nodes it might select.
	g.Eventually(func(g Gomega) {
		p := getPool(g, "unparsable")
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.DegradedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(v1alpha1.InvalidSelectorReason))
		g.Expect(c.Message).To(ContainSubstring("spec.nodeSelector cannot be parsed"))
		g.Expect(c.Message).To(ContainSubstring(`"Equals" is not a valid label selector operator`))
		for _, n := range nodes {
			g.Expect(c.Message).To(ContainSubstring(n))
		}
		g.Expect(meta.FindStatusCondition(p.Status.Conditions, v1alpha1.BlockedCondition)).To(HaveField("Reason", v1alpha1.InvalidSelectorReason))
	}, timeout).Should(Succeed())
	// The default pool, where the nodes would otherwise be, says which pool
	// keeps them out.
	g.Eventually(func(g Gomega) {
		p := getPool(g, v1alpha1.DefaultPoolName)
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConflictingCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(v1alpha1.InvalidSelectorReason))
		g.Expect(c.Message).To(ContainSubstring("might be selected by unparsable, whose nodeSelector cannot be parsed"))
		g.Expect(p.Status.Conflicting).To(BeEquivalentTo(len(nodes)))
	}, timeout).Should(Succeed())
	// Each waiting request says why, naming the pool.
	for _, n := range nodes {
		g.Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(hostMaintenance(g, n).Status.Conditions, v1alpha1.WaitingCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(v1alpha1.InvalidSelectorReason))
			g.Expect(c.Message).To(ContainSubstring("pool unparsable might select the node"))
		}, timeout).Should(Succeed())
	}
	// A pool the broken selector cannot select (its requirement pool=unparsable
	// still parses) reboots its node meanwhile.
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, bystander, false) }, timeout).Should(Succeed())
	for _, n := range nodes {
		g.Expect(getNode(g, n).Annotations).NotTo(HaveKey(protocol.Admitted), "%s is admitted by no pool", n)
	}

	// Fixed, the pool takes its nodes and reboots them one at a time.
	budget := watchBudget(t, "unparsable").FailAbove(1)
	daemons := runDaemons(t, "unparsable", false)
	harness.PatchPool(g, bed, "unparsable", func(p *v1alpha1.MaintenancePool) {
		p.Spec.NodeSelector.MatchExpressions[0].Operator = metav1.LabelSelectorOpIn
	})
	for _, n := range nodes {
		g.Eventually(func(g Gomega) { expectRebootedOnce(g, n, false) }, 2*timeout).Should(Succeed())
		g.Expect(daemons.Count(n)).To(Equal(1))
	}
	most, _ := budget.MostUnavailable()
	g.Expect(most).To(Equal(1))
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPool(g, "unparsable").Status.Conditions, v1alpha1.DegradedCondition)
		g.Expect(c).To(HaveField("Status", metav1.ConditionFalse))
	}, timeout).Should(Succeed())
}

// createDefault creates the MaintenancePool that configures the default
// pool, until the test ends.
func createDefault(t *testing.T, maxUnavailable int32) {
	mu := intstr.FromInt32(maxUnavailable)
	harness.CreateTemporary(t, bed, &v1alpha1.MaintenancePool{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.DefaultPoolName},
		Spec:       v1alpha1.MaintenancePoolSpec{MaxUnavailable: &mu},
	})
}
