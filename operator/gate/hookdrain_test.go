package gate_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// The drain around a node's beforeReboot hooks: kept while the node waits
// there, taken again after them, and forced or given up as any drain.

// landAtHook waits for the held Job of h to be made, then puts on its node
// the Job's own pod (in the hooks namespace, with its labels) and a pod
// that lands there, which a PodDisruptionBudget allowing nothing guards;
// it returns both.
func landAtHook(g Gomega, h heldJob) (hookPod, landed *corev1.Pod) {
	ctx := context.Background()
	g.Eventually(func(g Gomega) { g.Expect(hookRecord(g, h.node).Hooks[0].JobStarted.IsZero()).To(BeFalse()) }, timeout).Should(Succeed())
	job := h.jobs.Made()[0]
	hookPod = gen.Pod(h.ns, job.Name+"-x7k2p", h.node, job.Spec.Template.Labels)
	hookPod.OwnerReferences[0].APIVersion, hookPod.OwnerReferences[0].Kind = "batch/v1", "Job"
	hookPod.OwnerReferences[0].Name, hookPod.OwnerReferences[0].UID = job.Name, job.UID
	landed = gen.Pod("default", "landed-"+h.node, h.node, map[string]string{"app": "landed-" + h.node})
	// The budget comes first: the node's drain goes on while it waits at
	// its hook, and a step between the pod and its budget evicted it.
	g.Expect(gen.PDB(ctx, bed.Client, "default", landed.Name, landed.Labels, 0)).To(Succeed())
	for _, p := range []*corev1.Pod{hookPod, landed} {
		g.Expect(gen.CreatePod(ctx, bed.Client, p)).To(Succeed())
	}
	return hookPod, landed
}

func drainingMessage(g Gomega, pool string) string {
	c := meta.FindStatusCondition(getPool(g, pool).Status.Conditions, v1alpha1.DrainingCondition)
	g.Expect(c).NotTo(BeNil())
	return c.Message
}

// landedAtAbandoningHook starts the operator on a pool whose drain gives
// a node up after 8 s (Abandon), asks for its node's reboot, and lands a
// pod at the node's beforeReboot hook (landAtHook).
func landedAtAbandoningHook(t *testing.T, g Gomega, pool string) (heldJob, *corev1.Pod) {
	h := newHeldJob(t, pool, func(p *v1alpha1.MaintenancePool) {
		p.Spec.Drain.Timeout = &metav1.Duration{Duration: 8 * time.Second}
		p.Spec.Drain.OnTimeout = v1alpha1.DrainAbandonAction
	})
	harness.StartOperatorWith(t, bed, operator.Options{HooksNamespace: h.ns})
	h.started(t, g)
	_, landed := landAtHook(g, h)
	return h, landed
}

// expectAbandonedFor waits for the node of h to be let go at its drain's
// deadline, its request failed naming the landed pod; the node did not
// reboot, and nothing forced the pod out.
func expectAbandonedFor(g Gomega, h heldJob, landed *corev1.Pod) {
	g.Eventually(func(g Gomega) {
		n := getNode(g, h.node)
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.Admitted))
		g.Expect(n.Spec.Unschedulable).To(BeFalse())
		g.Expect(n.Annotations[protocol.DrainFailed]).To(And(ContainSubstring("DrainTimeout"), ContainSubstring("default/"+landed.Name)))
	}, timeout).Should(Succeed())
	g.Expect(h.daemons.Count(h.node)).To(BeZero())
	g.Expect(bed.Client.Get(context.Background(), client.ObjectKeyFromObject(landed), &corev1.Pod{})).To(Succeed(), "nothing forced it out")
}

// A pod that lands on a node while it waits at its beforeReboot hooks (it
// tolerates the cordon, or is bound to the node by name) is evicted before
// the reboot, its PodDisruptionBudget holding: the approval waits for the
// drain to find the node drained again. The hook Job's own pod on the node
// is left be. Approved on the drain that ended before the hook, the node
// rebooted with the pod on it, the budget unasked.
func TestAPodThatLandsAtABeforeRebootHookIsEvictedBeforeTheReboot(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h := newHeldJob(t, "hooklanded")
	harness.StartOperatorWith(t, bed, operator.Options{HooksNamespace: h.ns})
	h.started(t, g)
	hookPod, landed := landAtHook(g, h)
	g.Expect(harness.FinishJob(ctx, bed.Client, h.jobs.Made()[0], harness.JobOutcome{})).To(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(drainingMessage(g, "hooklanded")).To(And(
			ContainSubstring("its beforeReboot hooks passed; its approval waits for the drain to find it drained again"),
			ContainSubstring("eviction of pod default/"+landed.Name+" refused")))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getNode(g, h.node).Annotations).NotTo(HaveKey(protocol.RebootApproved))
		g.Expect(bed.Client.Get(ctx, client.ObjectKeyFromObject(landed), &corev1.Pod{})).To(Succeed())
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	// The budget allows the eviction: the pod goes, then the node reboots.
	g.Expect(bed.Client.Delete(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: landed.Name}})).To(Succeed())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, h.node, false) }, timeout).Should(Succeed())
	g.Expect(h.daemons.Count(h.node)).To(Equal(1))
	err := bed.Client.Get(ctx, client.ObjectKeyFromObject(landed), &corev1.Pod{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the pod that landed was evicted: %v", err)
	g.Expect(bed.Client.Get(ctx, client.ObjectKeyFromObject(hookPod), &corev1.Pod{})).To(Succeed(), "the hook's pod stays")
}

// The drain taken again after the hooks is a drain like the first: past
// the pool's timeout, counted from when the hooks passed, drain.onTimeout
// says what happens (here Abandon: the node is let go, its request failed
// with the pod that held it, and it does not reboot). Without a deadline
// there, a pod whose budget never allows its eviction kept the node, and
// the pool's slot, for good.
func TestTheDrainAfterTheBeforeRebootHooksHasTheDrainsDeadline(t *testing.T) {
	g := NewWithT(t)
	h, landed := landedAtAbandoningHook(t, g, "hookdeadline")
	g.Expect(harness.FinishJob(context.Background(), bed.Client, h.jobs.Made()[0], harness.JobOutcome{})).To(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(drainingMessage(g, "hookdeadline")).To(ContainSubstring("eviction of pod default/" + landed.Name + " refused"))
	}, timeout).Should(Succeed())
	expectAbandonedFor(g, h, landed)
}

// A drain forced at its deadline takes the node to its beforeReboot hooks
// like any drain that ended: the Job the maintenance is for runs before the
// reboot is approved, and the approval keeps the record that the drain was
// forced. Forcing approved the node at once, and the Job never ran.
func TestAForcedDrainStillMeetsTheBeforeRebootHooks(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h := newHeldJob(t, "hookforced", func(p *v1alpha1.MaintenancePool) {
		p.Spec.Drain.Timeout = &metav1.Duration{Duration: 2 * time.Second}
		p.Spec.Drain.OnTimeout = v1alpha1.DrainForceAction
	})
	db := gen.Pod("default", "db-"+h.node, h.node, map[string]string{"app": "db-" + h.node})
	g.Expect(gen.CreatePod(ctx, bed.Client, db)).To(Succeed())
	g.Expect(gen.PDB(ctx, bed.Client, "default", db.Name, db.Labels, 0)).To(Succeed())
	harness.StartOperatorWith(t, bed, operator.Options{HooksNamespace: h.ns})
	request(t, h.node, "r", time.Now())

	g.Eventually(func(g Gomega) {
		g.Expect(podExists(g, "default", db.Name)).To(BeFalse(), "deleted by the forced drain")
		g.Expect(h.jobs.Made()).To(HaveLen(1), "its beforeReboot Job is made")
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getNode(g, h.node).Annotations).NotTo(HaveKey(protocol.RebootApproved))
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed(), "not approved while its Job runs")

	h.finish(g)
	nm := onlyMaintenance(g, h.node)
	c := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.DrainForcedCondition)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(c.Message).To(ContainSubstring("default/" + db.Name))
}

// A node whose beforeReboot hooks are taken out of its pool while it waits
// at them, with a pod landed on it that its budget keeps, has a drain like
// any other: its deadline counted from its admission, and drain.onTimeout
// (Abandon) lets it go, its request failed with the pod named. It neither
// reboots with the pod nor holds the pool's slot for good.
func TestHooksTakenOutWhileANodeWaitsLeaveItsDrainADeadline(t *testing.T) {
	g := NewWithT(t)
	h, landed := landedAtAbandoningHook(t, g, "hookgone")
	harness.PatchPool(g, bed, "hookgone", func(p *v1alpha1.MaintenancePool) { p.Spec.Hooks = nil })
	expectAbandonedFor(g, h, landed)
}
