package sim

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/testbed"
)

var bed *testbed.Bed

func TestMain(m *testing.M) {
	b, err := testbed.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bed = b
	code := m.Run()
	if err := b.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// TestDisruptionControllerKeepsEveryBudgetCurrent: a budget that selects no
// pod (the simulated workload has an app no node runs) is written like any
// other, and never keeps the others from following their pods: an eviction
// takes a budget's allowance to 0, and only the controller gives it back
// once the pod is gone. A budget left at 0 blocks every drain of its app.
func TestDisruptionControllerKeepsEveryBudgetCurrent(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cs := kubernetes.NewForConfigOrDie(bed.Config)
	g.Expect(gen.FinishPodDeletions(ctx, cs)).To(Succeed())
	const ns = "budgets"
	g.Expect(bed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	budget := func(app string) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MaxUnavailable: ptr.To(intstr.FromInt32(1)),
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			},
		}
	}
	g.Expect(bed.Client.Create(ctx, budget("idle"))).To(Succeed())
	g.Expect(bed.Client.Create(ctx, budget("web"))).To(Succeed())
	g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node("budgets-node"))).To(Succeed())
	for i := range 3 {
		p := gen.Pod(ns, fmt.Sprintf("web-%d", i), "budgets-node", map[string]string{"app": "web"})
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		g.Expect(gen.CreatePod(ctx, bed.Client, p)).To(Succeed())
	}
	g.Expect(runDisruptionController(ctx, cs)).To(Succeed())

	status := func(name string) func(g Gomega) policyv1.PodDisruptionBudgetStatus {
		return func(g Gomega) policyv1.PodDisruptionBudgetStatus {
			pdb := &policyv1.PodDisruptionBudget{}
			g.Expect(bed.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pdb)).To(Succeed())
			return pdb.Status
		}
	}
	g.Eventually(status("idle"), 30*time.Second).Should(And(HaveField("ObservedGeneration", BeNumerically(">", 0)),
		HaveField("ExpectedPods", BeZero()), HaveField("DesiredHealthy", BeZero()), HaveField("DisruptionsAllowed", BeZero())))
	g.Eventually(status("web"), 30*time.Second).Should(And(HaveField("ExpectedPods", BeEquivalentTo(3)), HaveField("DisruptionsAllowed", BeEquivalentTo(1))))

	// Each eviction takes the allowance; each pod gone gives it back.
	for i, left := range []int32{2, 1} {
		eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%d", i)}}
		g.Eventually(func() error { return cs.PolicyV1().Evictions(ns).Evict(ctx, eviction) }, 30*time.Second).Should(Succeed())
		g.Eventually(status("web"), 30*time.Second).Should(And(HaveField("ExpectedPods", BeEquivalentTo(left)), HaveField("DisruptionsAllowed", BeEquivalentTo(1))))
	}
}
