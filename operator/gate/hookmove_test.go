package gate_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// ackHook is an acknowledgement hook of the name.
func ackHook(name string) v1alpha1.Hook {
	return v1alpha1.Hook{Name: name, Acknowledgement: &v1alpha1.HookAcknowledgement{}}
}

// waitsAt waits until the node waits at point for hook, in its pool's
// record, and returns the token that opens it.
func waitsAt(g Gomega, node, pool string, point protocol.HookPoint, hook string) string {
	var token string
	g.Eventually(func(g Gomega) {
		rec := hookRecord(g, node)
		g.Expect(rec).NotTo(BeNil())
		g.Expect(rec.Point).To(Equal(point))
		g.Expect(rec.Pool).To(Equal(pool), "the record names the pool that admitted the node")
		g.Expect(rec.Waiting()).To(Equal([]string{hook}))
		token = rec.Token
	}, timeout).Should(Succeed())
	return token
}

// staysAt checks for a while that the node still waits at point for hook:
// neither passed nor dropped, its drain, approval or completion not begun
// past the point.
func staysAt(g Gomega, node string, point protocol.HookPoint, hook string) {
	g.Consistently(func(g Gomega) {
		rec := hookRecord(g, node)
		g.Expect(rec).NotTo(BeNil(), "the record was dropped")
		g.Expect(rec.Point).To(Equal(point))
		g.Expect(rec.Waiting()).To(Equal([]string{hook}))
		n := getNode(g, node)
		g.Expect(n.Spec.Unschedulable).To(BeTrue(), "still cordoned")
		g.Expect(n.Annotations).To(HaveKey(protocol.Admitted))
		if point != protocol.AfterReboot {
			g.Expect(n.Annotations).NotTo(HaveKey(protocol.RebootApproved))
		}
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
}

// A node moved out of its pool while it waits at a hook, at each of the
// three points, still waits there: the pool that admitted it keeps it, and
// its hooks still run and are still required. Relabelled into a pool
// without hooks, or unlabelled into the built-in default pool, it is never
// drained, approved or completed before the acknowledgement, and reboots
// once. Before, the pool it joined took the record for its own and, with
// no hook at the point, dropped it and went on.
func TestAHookStillHoldsANodeMovedToAnotherPoolAtEachPoint(t *testing.T) {
	g := NewWithT(t)
	pool := gen.Pool("hookmove", intstr.FromInt32(1))
	pool.Spec.Hooks = &v1alpha1.Hooks{
		BeforeDrain: []v1alpha1.Hook{ackHook("stepdown")}, BeforeReboot: []v1alpha1.Hook{ackHook("flush")}, AfterReboot: []v1alpha1.Hook{ackHook("rejoin")},
	}
	createPool(t, pool)
	createPool(t, gen.Pool("hookthief", intstr.FromInt32(5)))
	node := createNodes(t, "hookmove", "hookmove", 1, gen.Labels("hookmove-test", "points"))[0]
	daemons := harness.RunDaemonsOf(t, bed, client.MatchingLabels{"hookmove-test": "points"}, false)
	startOperator(t)
	request(t, node, "r", time.Now())

	token := waitsAt(g, node, "hookmove", protocol.BeforeDrain, "stepdown")
	relabel(g, node, "hookthief")
	staysAt(g, node, protocol.BeforeDrain, "stepdown")
	g.Expect(getPool(g, "hookthief").Status.Nodes).To(BeZero(), "the pool its labels name does not take it")

	acknowledge(g, node, "stepdown", token)
	token = waitsAt(g, node, "hookmove", protocol.BeforeReboot, "flush")
	unlabel(g, node)
	staysAt(g, node, protocol.BeforeReboot, "flush")

	acknowledge(g, node, "flush", token)
	token = waitsAt(g, node, "hookmove", protocol.AfterReboot, "rejoin")
	g.Expect(getNode(g, node).Status.NodeInfo.BootID).To(Equal("boot-0-r1"))
	relabel(g, node, "hookthief")
	staysAt(g, node, protocol.AfterReboot, "rejoin")

	acknowledge(g, node, "rejoin", token)
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, node, false) }, timeout).Should(Succeed())
	g.Expect(daemons.Count(node)).To(Equal(1))
	// Its maintenance over, it is where its labels put it.
	g.Eventually(func(g Gomega) { g.Expect(getPool(g, "hookthief").Status.Nodes).To(BeEquivalentTo(1)) }, timeout).Should(Succeed())
}

// A beforeReboot Job hook still runs, once, and still holds its node's
// reboot when the node is unlabelled into the default pool while the Job
// runs.
func TestABeforeRebootJobStillHoldsANodeMovedToTheDefaultPool(t *testing.T) {
	g := NewWithT(t)
	pool := gen.Pool("jobmove", intstr.FromInt32(1))
	pool.Spec.Hooks = &v1alpha1.Hooks{BeforeReboot: []v1alpha1.Hook{jobHook("install")}}
	createPool(t, pool)
	node := createNodes(t, "jobmove", "jobmove", 1, gen.Labels("hookmove-test", "job"))[0]
	daemons := harness.RunDaemonsOf(t, bed, client.MatchingLabels{"hookmove-test": "job"}, false)
	ns := "hooks-jobmove"
	harness.Create(t, bed, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	jobs := harness.RunJobs(t, bed, ns, func(*batchv1.Job) harness.JobOutcome { return harness.JobOutcome{Hold: true} })
	harness.StartOperatorWith(t, bed, operator.Options{HooksNamespace: ns})
	request(t, node, "r", time.Now())
	g.Eventually(func(g Gomega) { g.Expect(jobs.Made()).To(HaveLen(1)) }, timeout).Should(Succeed())

	unlabel(g, node)
	staysAt(g, node, protocol.BeforeReboot, "install")
	g.Expect(jobs.Made()).To(HaveLen(1))
	g.Expect(jobs.Made()[0].Annotations).To(HaveKeyWithValue("kmaint.io/pool", "jobmove"))

	g.Expect(harness.FinishJob(context.Background(), bed.Client, jobs.Made()[0], harness.JobOutcome{})).To(Succeed())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, node, false) }, timeout).Should(Succeed())
	g.Expect(jobs.Made()).To(HaveLen(1), "the Job ran once")
	g.Expect(daemons.Count(node)).To(Equal(1))
}

// A pool pointed at another pool's nodes neither drives nor takes them: a
// node of the other pool in flight stays with the pool that admitted it,
// its hook record kept and still required; a waiting node now in both is
// held and reported by both, admitted by neither, until the selector is
// put back. (Who may point a pool's selector at which nodes is admission's
// business: config/admission/pool-selectors-policy.yaml, test/install.)
func TestAPoolPointedAtAnotherPoolsNodesNeitherDrivesNorTakesThem(t *testing.T) {
	g := NewWithT(t)
	victim := gen.Pool("victim", intstr.FromInt32(1))
	victim.Spec.Hooks = &v1alpha1.Hooks{BeforeDrain: []v1alpha1.Hook{ackHook("stepdown")}}
	createPool(t, victim)
	grabber := gen.Pool("grabber", intstr.FromInt32(5))
	grabber.Spec.Drain.OnTimeout = v1alpha1.DrainForceAction
	createPool(t, grabber)
	nodes := createNodes(t, "victim", "victim", 2, gen.Labels("grab-test", "yes"))
	daemons := harness.RunDaemonsOf(t, bed, client.MatchingLabels{"grab-test": "yes"}, false)
	startOperator(t)
	request(t, nodes[0], "a", time.Now())
	token := waitsAt(g, nodes[0], "victim", protocol.BeforeDrain, "stepdown")
	request(t, nodes[1], "b", time.Now().Add(time.Second))
	expectBlocked(g, "victim", v1alpha1.BudgetExhaustedReason, "waiting: "+nodes[1])

	harness.PatchPool(g, bed, "grabber", func(p *v1alpha1.MaintenancePool) {
		p.Spec.NodeSelector.MatchLabels = map[string]v1alpha1.SelectorValue{"pool": "victim"}
	})
	for _, p := range []string{"victim", "grabber"} {
		g.Eventually(func(g Gomega) {
			s := getPool(g, p).Status
			g.Expect(s.Conflicting).To(BeEquivalentTo(1), "pool %s reports the waiting node in both", p)
		}, timeout).Should(Succeed())
	}
	g.Expect(getPool(g, "grabber").Status.Nodes).To(BeEquivalentTo(1), "the grabber has the waiting node, not the one in flight")
	staysAt(g, nodes[0], protocol.BeforeDrain, "stepdown")

	// Opened, the node in flight goes on in its own pool; the waiting one
	// stays held while two pools select it.
	acknowledge(g, nodes[0], "stepdown", token)
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[0], false) }, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) map[string]string { return getNode(g, nodes[1]).Annotations }, 3*time.Second, 200*time.Millisecond).
		ShouldNot(HaveKey(protocol.Admitted))

	harness.PatchPool(g, bed, "grabber", func(p *v1alpha1.MaintenancePool) {
		p.Spec.NodeSelector.MatchLabels = map[string]v1alpha1.SelectorValue{"pool": "grabber"}
	})
	token = waitsAt(g, nodes[1], "victim", protocol.BeforeDrain, "stepdown")
	acknowledge(g, nodes[1], "stepdown", token)
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[1], false) }, timeout).Should(Succeed())
	g.Expect(daemons.Count(nodes[0]) + daemons.Count(nodes[1])).To(Equal(2))
}
