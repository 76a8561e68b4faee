package aftercare_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/statuspatch"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// settlingNode makes a pool with one health check and one node of it in
// the state a completed reboot leaves (its settle record, from since to
// until), the gate's part of the pool's status written; it returns the
// node's name.
func settlingNode(t *testing.T, g Gomega, name string, check v1alpha1.HealthCheck, since, until time.Time, opts ...gen.NodeOption) string {
	t.Helper()
	ctx := context.Background()
	pool := gen.Pool(name, intstr.FromInt32(1))
	pool.Spec.SettleTime = &metav1.Duration{Duration: time.Second}
	pool.Spec.HealthChecks = &v1alpha1.HealthChecks{Queries: []v1alpha1.HealthCheck{check}, Interval: &metav1.Duration{Duration: 5 * time.Second}}
	harness.Create(t, bed, pool)
	live := harness.GetPool(g, bed, name)
	live.Status.ObservedGeneration = live.Generation
	g.Expect(bed.Client.Status().Patch(ctx, live, statuspatch.Whole{})).To(Succeed())

	node := harness.CreateNodes(t, bed, name, name, 1, opts...)[0]
	n := harness.GetNode(g, bed, node)
	base := n.DeepCopy()
	protocol.Complete(nil, &protocol.Settle{BootID: n.Status.NodeInfo.BootID, RebootedBoot: "boot-before", Pool: name, Since: since, Until: until}).Apply(n)
	g.Expect(bed.Client.Patch(ctx, n, client.MergeFrom(base))).To(Succeed())
	return node
}

// A settling node whose object check is false fails it as a node a query
// names does: its pool halts, with the check and the node on record, and
// a resume lifts the halt. No Prometheus is configured at all.
func TestFailedObjectCheckHaltsAndAResumeLiftsIt(t *testing.T) {
	g := NewWithT(t)
	const name = "ac-objhalt"
	now := time.Now()
	check := v1alpha1.HealthCheck{Name: "app-ready", Objects: &v1alpha1.CheckObjects{Node: &v1alpha1.NodeObjects{}},
		Expression: `node.metadata.labels['kmaint.test/app'] == 'ready'`}
	node := settlingNode(t, g, name, check, now, now.Add(time.Second), gen.Labels("kmaint.test/app", "broken"))
	startAftercare(t, nil)

	var failedAt metav1.Time
	g.Eventually(func(g Gomega) {
		p := harness.GetPool(g, bed, name)
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.HaltedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(v1alpha1.HealthCheckFailedReason), "message %q", c.Message)
		g.Expect(c.Message).To(ContainSubstring("the expression is false for node " + node))
		g.Expect(p.Status.Halt).NotTo(BeNil())
		g.Expect(p.Status.Halt.Nodes).To(ConsistOf(And(HaveField("Node", node), HaveField("Check", "app-ready"), HaveField("Value", "false"))))
		failedAt = p.Status.Halt.Nodes[0].Time
	}, timeout).Should(Succeed())
	s, err := protocol.Read(harness.GetNode(g, bed, node))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Settle.Failure).NotTo(BeNil(), "the failure is written on the node, for a restarted operator")

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
	}, timeout).Should(Succeed())
}

// A health object check that cannot say true or false passes no node: the
// pool is halted with the check's own reason, and the node, whose settle
// time is over, keeps its slot.
func TestObjectCheckThatCannotBeEvaluatedPassesNoNode(t *testing.T) {
	nodeKind := &v1alpha1.CheckObjects{Node: &v1alpha1.NodeObjects{}}
	cases := map[string]struct {
		pool      string
		objects   *v1alpha1.CheckObjects
		expr      string
		forbidden bool
		// wantReason is the Halted reason, wantMessage a substring of its
		// message.
		wantReason  string
		wantMessage string
	}{
		"an expression that does not compile": {
			pool: "ac-objc", objects: nodeKind, expr: `node.status.conditions.exists(c,`,
			wantReason: v1alpha1.InvalidObjectCheckReason, wantMessage: "does not compile",
		},
		"an estimated cost past the limit": {
			pool: "ac-objcost", objects: &v1alpha1.CheckObjects{PodsOnNode: &v1alpha1.PodsOnNodeObjects{}},
			expr:       `pods.all(a, pods.all(b, pods.all(c, a.metadata.name != c.metadata.name)))`,
			wantReason: v1alpha1.ObjectCheckCostExceededReason, wantMessage: "more than the limit",
		},
		"an expression that fails as it runs": {
			pool: "ac-objrun", objects: nodeKind, expr: `node.metadata.labels['kmaint.test/absent'] == 'x'`,
			wantReason: v1alpha1.ObjectCheckFailedReason, wantMessage: "no such key",
		},
		"pods the operator may not read": {
			pool: "ac-objforbid", objects: &v1alpha1.CheckObjects{Pods: &v1alpha1.PodObjects{Namespace: "default"}}, expr: `pods.size() >= 0`,
			forbidden: true, wantReason: v1alpha1.ObjectCheckForbiddenReason, wantMessage: "may not list the pods in namespace default",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			// The settle time is over: the first evaluation that finds
			// the node healthy would pass it.
			now := time.Now()
			check := v1alpha1.HealthCheck{Name: "app-ready", Objects: tc.objects, Expression: tc.expr}
			node := settlingNode(t, g, tc.pool, check, now.Add(-time.Minute), now.Add(-time.Minute+time.Second))
			var reader client.Reader
			if tc.forbidden {
				cfg := rest.CopyConfig(bed.Config)
				cfg.Impersonate = rest.ImpersonationConfig{UserName: "kmaint-test-no-rights"}
				c, err := client.New(cfg, client.Options{Scheme: bed.Scheme})
				g.Expect(err).NotTo(HaveOccurred())
				reader = c
			}
			startAftercareReading(t, nil, reader)

			g.Eventually(func(g Gomega) {
				p := harness.GetPool(g, bed, tc.pool)
				c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.HaltedCondition)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(c.Reason).To(Equal(tc.wantReason), "message %q", c.Message)
				g.Expect(c.Message).To(ContainSubstring(`health check "app-ready" cannot be evaluated`))
				g.Expect(c.Message).To(ContainSubstring(tc.wantMessage))
			}, timeout).Should(Succeed())
			s, err := protocol.Read(harness.GetNode(g, bed, node))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.Settle).NotTo(BeNil(), "the node keeps its slot: a check that cannot be evaluated passes no one")
			g.Expect(harness.GetPool(g, bed, tc.pool).Status.Settling).To(BeEquivalentTo(1))
		})
	}
}

// A health check of pods chosen by namespace and selector is evaluated
// once for every settling node: while none of the database's pods is
// there, each settling node fails it.
func TestObjectCheckOfSelectedPodsFailsEverySettlingNode(t *testing.T) {
	g := NewWithT(t)
	const name = "ac-objpods"
	now := time.Now()
	check := v1alpha1.HealthCheck{Name: "db-up", Expression: `pods.size() >= 1`, Objects: &v1alpha1.CheckObjects{Pods: &v1alpha1.PodObjects{
		Namespace: "default", Selector: &v1alpha1.PodLabelSelector{MatchLabels: map[string]v1alpha1.SelectorValue{"app": name}}}}}
	node := settlingNode(t, g, name, check, now, now.Add(time.Second))
	startAftercare(t, nil)

	g.Eventually(func(g Gomega) {
		p := harness.GetPool(g, bed, name)
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.HaltedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(v1alpha1.HealthCheckFailedReason), "message %q", c.Message)
		g.Expect(c.Message).To(ContainSubstring("the expression is false for the 0 pods in namespace default matching app=" + name))
		g.Expect(p.Status.Halt).NotTo(BeNil())
		g.Expect(p.Status.Halt.Nodes).To(ConsistOf(And(HaveField("Node", node), HaveField("Check", "db-up"))))
	}, timeout).Should(Succeed())
}
