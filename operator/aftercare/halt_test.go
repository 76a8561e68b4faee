package aftercare_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/statuspatch"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

const timeout = 30 * time.Second

// A settling node whose check fails halts its pool, and a resume at the
// failure's time lifts the halt and frees the node's slot: aftercare alone,
// with no drain and no gate, from the state a completed reboot leaves.
func TestFailedCheckHaltsAndAResumeLiftsItWithoutADrain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name = "ac-halt"
	pool := gen.Pool(name, intstr.FromInt32(1))
	pool.Spec.SettleTime = &metav1.Duration{Duration: time.Second}
	pool.Spec.HealthChecks = &v1alpha1.HealthChecks{Queries: []v1alpha1.HealthCheck{{Name: "node-ok", Query: "app_ready == 0"}},
		Interval: &metav1.Duration{Duration: 5 * time.Second}}
	harness.Create(t, bed, pool)
	// The gate writes the pool's counts first; aftercare applies the halt
	// beside them.
	live := harness.GetPool(g, bed, name)
	live.Status.ObservedGeneration = live.Generation
	g.Expect(bed.Client.Status().Patch(ctx, live, statuspatch.Whole{})).To(Succeed())

	node := harness.CreateNodes(t, bed, name, name, 1)[0]
	n := harness.GetNode(g, bed, node)
	now := time.Now()
	settle := &protocol.Settle{BootID: n.Status.NodeInfo.BootID, RebootedBoot: "boot-before", Pool: name, Since: now, Until: now.Add(time.Second)}
	base2 := n.DeepCopy()
	protocol.Complete(nil, settle).Apply(n)
	g.Expect(bed.Client.Patch(ctx, n, client.MergeFrom(base2))).To(Succeed())

	q := &querier{}
	q.set(model.Vector{{Metric: model.Metric{"node": model.LabelValue(node)}, Value: 0}})
	startAftercare(t, q)

	var failedAt metav1.Time
	g.Eventually(func(g Gomega) {
		p := harness.GetPool(g, bed, name)
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.HaltedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(v1alpha1.HealthCheckFailedReason))
		g.Expect(p.Status.Settling).To(BeEquivalentTo(1))
		g.Expect(p.Status.Halt).NotTo(BeNil())
		g.Expect(p.Status.Halt.Nodes).To(ConsistOf(HaveField("Node", node)))
		g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation), "the gate's fields are left as they were")
		failedAt = p.Status.Halt.Nodes[0].Time
	}, timeout).Should(Succeed())
	s, err := protocol.Read(harness.GetNode(g, bed, node))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Settle.Failure).NotTo(BeNil(), "the failure is written on the node, for a restarted operator")

	q.set(nil)
	harness.PatchPool(g, bed, name, func(p *v1alpha1.MaintenancePool) {
		p.Annotations = map[string]string{v1alpha1.ResumeHaltAnnotation: failedAt.UTC().Format(time.RFC3339)}
	})
	g.Eventually(func(g Gomega) {
		s, err := protocol.Read(harness.GetNode(g, bed, node))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(s.Settle).To(BeNil(), "the resumed node gives up its slot")
		p := harness.GetPool(g, bed, name)
		g.Expect(meta.IsStatusConditionFalse(p.Status.Conditions, v1alpha1.HaltedCondition)).To(BeTrue())
		g.Expect(p.Status.Halt).To(BeNil())
		g.Expect(p.Status.Settling).To(BeZero())
	}, timeout).Should(Succeed())
}
