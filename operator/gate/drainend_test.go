package gate_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// blockedDrainPool creates a pool whose one node has a pod a
// PodDisruptionBudget keeps (ns/db-0) and one it lets go (ns/free-0), with
// this drain timeout and action; it returns the node.
func blockedDrainPool(t *testing.T, name string, timeout time.Duration, action v1alpha1.DrainTimeoutAction, retry *v1alpha1.DrainRetry, change ...func(*v1alpha1.MaintenancePool)) string {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	harness.CreateNamespace(t, bed, name)
	pool := gen.Pool(name, intstr.FromInt32(1))
	pool.Spec.Drain.Timeout = &metav1.Duration{Duration: timeout}
	pool.Spec.Drain.OnTimeout = action
	pool.Spec.Drain.Retry = retry
	for _, c := range change {
		c(pool)
	}
	createPool(t, pool)
	node := createNodes(t, name, name, 1)[0]
	g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod(name, "db-0", node, map[string]string{"app": "db"}))).To(Succeed())
	g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod(name, "free-0", node, map[string]string{"app": "free"}))).To(Succeed())
	g.Expect(gen.PDB(ctx, bed.Client, name, "db", map[string]string{"app": "db"}, 0)).To(Succeed())
	return node
}

func retryOf(g Gomega, node string) *protocol.DrainRetrying {
	st, err := protocol.Read(getNode(g, node))
	g.Expect(err).NotTo(HaveOccurred())
	return st.DrainRetry
}

// onlyMaintenance returns the node's one NodeMaintenance.
func onlyMaintenance(g Gomega, node string) v1alpha1.NodeMaintenance {
	nms := harness.MaintenancesOf(g, bed, node)
	g.Expect(nms).To(HaveLen(1))
	return nms[0]
}

// Retry: at the deadline the node is uncordoned and its marks removed, the
// request waits and says which attempt comes next and when, the node is
// admitted again after the backoff, and once the blocker goes the drain
// finishes and the node reboots, once.
func TestDrainRetryUncordonsWaitsAndSucceedsOnceTheBlockerGoes(t *testing.T) {
	g := NewWithT(t)
	const lb = "node.kubernetes.io/exclude-from-external-load-balancers"
	node := blockedDrainPool(t, "retry-ok", 3*time.Second, v1alpha1.DrainRetryAction,
		&v1alpha1.DrainRetry{MaxAttempts: 3, Backoff: &metav1.Duration{Duration: 3 * time.Second}},
		func(p *v1alpha1.MaintenancePool) {
			p.Spec.NodeMarking = &v1alpha1.NodeMarking{DuringReboot: &v1alpha1.DuringRebootMarks{Labels: map[string]v1alpha1.MarkValue{lb: "true"}}}
		})
	daemons := runDaemons(t, "retry-ok", false)
	startOperator(t)

	request(t, node, "r", time.Now())
	g.Eventually(func(g Gomega) {
		n := getNode(g, node)
		g.Expect(n.Annotations).To(HaveKey(protocol.Admitted))
		g.Expect(n.Labels).To(HaveKeyWithValue(lb, "true"), "marked before its drain")
	}, timeout).Should(Succeed())

	// The first attempt times out: uncordoned, unmarked, waiting.
	g.Eventually(func(g Gomega) {
		n := getNode(g, node)
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.Admitted))
		g.Expect(n.Spec.Unschedulable).To(BeFalse())
		g.Expect(n.Labels).NotTo(HaveKey(lb))
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.DrainFailed))
		r := retryOf(g, node)
		g.Expect(r).NotTo(BeNil())
		g.Expect(r.Attempts).To(Equal(1))
		g.Expect(r.Message).To(ContainSubstring("retry-ok/db-0"))
		nm := onlyMaintenance(g, node)
		g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseRequested))
		w := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.WaitingCondition)
		g.Expect(w).NotTo(BeNil())
		g.Expect(w.Reason).To(Equal(v1alpha1.DrainRetryBackoffReason))
		g.Expect(w.Message).To(And(ContainSubstring("drain attempt 1 of 3"), ContainSubstring("attempt 2 of 3 not before "+r.NextAt.UTC().Format(time.RFC3339))))
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "Node", node, "Warning") }, timeout).
		Should(ContainElement(v1alpha1.DrainRetryScheduledReason))
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "MaintenancePool", "retry-ok", "Warning") }, timeout).
		Should(ContainElement(v1alpha1.DrainRetryScheduledReason))

	// After the backoff it is admitted again, and says which attempt.
	g.Eventually(func(g Gomega) {
		n := getNode(g, node)
		g.Expect(n.Annotations).To(HaveKey(protocol.Admitted))
		g.Expect(n.Labels).To(HaveKeyWithValue(lb, "true"), "marked again")
		nm := onlyMaintenance(g, node)
		g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseDraining))
		g.Expect(nm.Status.Message).To(ContainSubstring("attempt 2 of 3"))
	}, timeout).Should(Succeed())
	g.Expect(daemons.Count(node)).To(BeZero())

	// The blocker goes: the drain finishes and the node reboots.
	setPDBAllowed(g, "retry-ok", "db", 1)
	g.Eventually(func(g Gomega) {
		expectRebootedOnce(g, node, false)
		n := getNode(g, node)
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.DrainRetry))
		g.Expect(n.Labels).NotTo(HaveKey(lb))
		g.Expect(onlyMaintenance(g, node).Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
	}, timeout).Should(Succeed())
	g.Expect(daemons.Count(node)).To(Equal(1))
}

// The last attempt that times out ends as an abandoned drain: the request
// fails, saying so, and the node is uncordoned and not rebooted. The count
// is kept on the node: an operator restarted between attempts counts on.
func TestDrainRetriesSurviveARestartAndEndAsAbandoned(t *testing.T) {
	g := NewWithT(t)
	node := blockedDrainPool(t, "retry-out", 2*time.Second, v1alpha1.DrainRetryAction,
		&v1alpha1.DrainRetry{MaxAttempts: 4, Backoff: &metav1.Duration{Duration: time.Second}})
	daemons := runDaemons(t, "retry-out", false)
	stop := startOperator(t)

	request(t, node, "r", time.Now())
	var first protocol.DrainRetrying
	g.Eventually(func(g Gomega) {
		r := retryOf(g, node)
		g.Expect(r).NotTo(BeNil())
		g.Expect(r.Attempts).To(Equal(1))
		first = *r
	}, timeout).Should(Succeed())
	stop()
	startOperator(t)

	// The next record the restarted operator writes counts on from the
	// node's: attempt 2, not 1 again.
	g.Eventually(func(g Gomega) {
		r := retryOf(g, node)
		g.Expect(r).NotTo(BeNil(), "abandoned before its second retry was seen")
		g.Expect(r.NextAt).NotTo(Equal(first.NextAt))
		g.Expect(r.Attempts).To(Equal(2))
	}, timeout, 10*time.Millisecond).Should(Succeed())

	g.Eventually(func(g Gomega) {
		n := getNode(g, node)
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.Admitted))
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.DrainRetry))
		g.Expect(n.Spec.Unschedulable).To(BeFalse())
		st, err := protocol.Read(n)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.DrainFailure).NotTo(BeNil())
		g.Expect(st.DrainFailure.Message).To(ContainSubstring("attempt 4 of 4; no attempt left"))
		nm := onlyMaintenance(g, node)
		g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseFailed))
		c := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.SucceededCondition)
		g.Expect(c.Reason).To(Equal(v1alpha1.DrainTimeoutReason))
		g.Expect(c.Message).To(And(ContainSubstring("retry-out/db-0"), ContainSubstring("attempt 4 of 4")))
		reasons := harness.EventReasons(g, bed, "Node", node, "Warning")
		g.Expect(reasons).To(ContainElements(v1alpha1.DrainRetryScheduledReason, v1alpha1.DrainFailedEventReason))
	}, timeout).Should(Succeed())
	g.Expect(daemons.Count(node)).To(BeZero())
	g.Expect(podExists(g, "retry-out", "db-0")).To(BeTrue(), "nothing is evicted against a PodDisruptionBudget")
}

// Force: past the deadline the pod the PodDisruptionBudget keeps is
// deleted and the node reboots anyway; the node, the pool and the request
// say so loudly, naming the pod. A mirror pod is never touched.
func TestForcedDrainDeletesWhatEvictionCouldNotMoveAndReboots(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	node := blockedDrainPool(t, "forced", 2*time.Second, v1alpha1.DrainForceAction, nil)
	mirror := gen.Pod("forced", "static-0", node, nil)
	mirror.OwnerReferences = nil
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	g.Expect(gen.CreatePod(ctx, bed.Client, mirror)).To(Succeed())
	daemons := runDaemons(t, "forced", false)
	startOperator(t)

	request(t, node, "r", time.Now())
	g.Eventually(func(g Gomega) {
		expectRebootedOnce(g, node, false)
		g.Expect(podExists(g, "forced", "db-0")).To(BeFalse())
		nm := onlyMaintenance(g, node)
		g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		c := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.DrainForcedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Message).To(And(ContainSubstring("forced/db-0"), ContainSubstring("bypassing their PodDisruptionBudgets")))
		g.Expect(c.Message).NotTo(ContainSubstring("static-0"))
		for _, kind := range []struct{ kind, name string }{{"Node", node}, {"MaintenancePool", "forced"}, {"NodeMaintenance", nm.Name}} {
			g.Expect(harness.EventReasons(g, bed, kind.kind, kind.name, "Warning")).To(ContainElement(v1alpha1.DrainForcedReason), kind.kind)
		}
	}, timeout).Should(Succeed())
	g.Expect(podExists(g, "forced", "static-0")).To(BeTrue(), "a mirror pod is not kmaint's to delete")
	st, err := protocol.Read(getNode(g, node))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.DrainForced).NotTo(BeNil())
	g.Expect(st.DrainForced.Pods).To(Equal([]string{"forced/db-0"}))
	g.Expect(daemons.Count(node)).To(Equal(1))
}

// Marks go on before the drain and come off after the reboot: only what
// kmaint added, whatever the pool's spec says by then; a label the node
// had with the same value stays, one with another value gets it back, and
// the afterReboot labels stay on.
func TestMarksComeOffAfterTheRebootAndOnlyKmaintsOwn(t *testing.T) {
	g := NewWithT(t)
	const (
		lb    = "node.kubernetes.io/exclude-from-external-load-balancers"
		own   = "example.com/preexisting"
		state = "example.com/state"
		after = "example.com/last-reboot"
		taint = "example.com/rebooting"
	)
	node := blockedDrainPool(t, "marks", time.Hour, v1alpha1.DrainAbandonAction, nil, func(p *v1alpha1.MaintenancePool) {
		p.Spec.NodeMarking = &v1alpha1.NodeMarking{
			DuringReboot: &v1alpha1.DuringRebootMarks{
				Labels: map[string]v1alpha1.MarkValue{lb: "true", own: "yes", state: "rebooting"},
				Taints: []v1alpha1.MarkTaint{{Key: taint, Effect: "PreferNoSchedule"}, {Key: "example.com/held", Effect: "NoSchedule"}},
			},
			AfterReboot: &v1alpha1.AfterRebootMarks{Labels: map[string]v1alpha1.MarkValue{after: "done"}},
		}
	})
	// The node's own: a label with the same value, one with another, a
	// taint with the same key and effect.
	n := getNode(g, node)
	base := n.DeepCopy()
	n.Labels[own], n.Labels[state] = "yes", "idle"
	n.Spec.Taints = []corev1.Taint{{Key: "example.com/held", Value: "by-person", Effect: corev1.TaintEffectNoSchedule}}
	g.Expect(bed.Client.Patch(context.Background(), n, client.MergeFrom(base))).To(Succeed())
	runDaemons(t, "marks", false)
	startOperator(t)

	request(t, node, "r", time.Now())
	g.Eventually(func(g Gomega) {
		n := getNode(g, node)
		g.Expect(n.Annotations).To(HaveKey(protocol.Admitted))
		g.Expect(n.Labels).To(And(HaveKeyWithValue(lb, "true"), HaveKeyWithValue(own, "yes"), HaveKeyWithValue(state, "rebooting")))
		g.Expect(n.Spec.Taints).To(ContainElement(corev1.Taint{Key: taint, Effect: corev1.TaintEffectPreferNoSchedule}))
		g.Expect(n.Spec.Taints).To(ContainElement(corev1.Taint{Key: "example.com/held", Value: "by-person", Effect: corev1.TaintEffectNoSchedule}))
		g.Expect(podExists(g, "marks", "free-0")).To(BeFalse(), "the drain runs, marked")
	}, timeout).Should(Succeed())

	// The pool's marking changes mid-reboot: what was added still comes
	// off, what the new spec says never goes on.
	harness.PatchPool(g, bed, "marks", func(p *v1alpha1.MaintenancePool) {
		p.Spec.NodeMarking.DuringReboot = &v1alpha1.DuringRebootMarks{Labels: map[string]v1alpha1.MarkValue{"example.com/other": "x"}}
	})
	setPDBAllowed(g, "marks", "db", 1)
	g.Eventually(func(g Gomega) {
		expectRebootedOnce(g, node, false)
		n := getNode(g, node)
		g.Expect(n.Labels).NotTo(HaveKey(lb))
		g.Expect(n.Labels).NotTo(HaveKey("example.com/other"))
		g.Expect(n.Labels).To(HaveKeyWithValue(own, "yes"), "the node's own label stays")
		g.Expect(n.Labels).To(HaveKeyWithValue(state, "idle"), "the node's own value comes back")
		g.Expect(n.Labels).To(HaveKeyWithValue(after, "done"))
		g.Expect(n.Spec.Taints).To(Equal([]corev1.Taint{{Key: "example.com/held", Value: "by-person", Effect: corev1.TaintEffectNoSchedule}}))
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.NodeMarks))
	}, timeout).Should(Succeed())
}

// A mark that another pool's selector matches moves no node in flight: the
// node stays with the pool that admitted it, whose drain and hooks go on,
// and the other pool, whose hook would hold it, never drives it. Its marks
// come off when its reboot completes.
func TestAMarkAnotherPoolSelectsMovesNoNodeInFlight(t *testing.T) {
	g := NewWithT(t)
	other := gen.Pool("marks-other", intstr.FromInt32(1))
	other.Spec.NodeSelector = &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.SelectorValue{"example.com/tier": "canary"}}
	other.Spec.Hooks = &v1alpha1.Hooks{BeforeReboot: []v1alpha1.Hook{{Name: "never", Acknowledgement: &v1alpha1.HookAcknowledgement{}}}}
	createPool(t, other)
	pool := gen.Pool("marks-move", intstr.FromInt32(1))
	pool.Spec.NodeMarking = &v1alpha1.NodeMarking{DuringReboot: &v1alpha1.DuringRebootMarks{
		Labels: map[string]v1alpha1.MarkValue{"example.com/tier": "canary"}}}
	createPool(t, pool)
	node := createNodes(t, "marks-move", "marks-move", 1)[0]
	daemons := runDaemons(t, "marks-move", false)
	startOperator(t)

	request(t, node, "r", time.Now())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, node, false) }, timeout).Should(Succeed())
	g.Expect(getNode(g, node).Labels).NotTo(HaveKey("example.com/tier"))
	g.Expect(daemons.Count(node)).To(Equal(1))
	g.Expect(harness.EventReasons(g, bed, "Node", node, "Warning")).NotTo(ContainElement(v1alpha1.NodeMarkingRefusedReason))
	g.Expect(getPool(g, "marks-other").Status.AtHooks).To(BeZero(), "the other pool never held it at its hook")
}

func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

// A node marked for its reboot that does not come back keeps its marks,
// as it stays cordoned: it is not in service. Once it is back the reboot
// completes and the marks come off, the afterReboot labels on.
func TestMarksStayOnANodeNotBackUntilItReturns(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const lb = "node.kubernetes.io/exclude-from-external-load-balancers"
	pool := gen.Pool("marks-gone", intstr.FromInt32(1))
	pool.Spec.NodeMarking = &v1alpha1.NodeMarking{
		DuringReboot: &v1alpha1.DuringRebootMarks{Labels: map[string]v1alpha1.MarkValue{lb: "true"},
			Taints: []v1alpha1.MarkTaint{{Key: "example.com/rebooting", Effect: "NoSchedule"}}},
		AfterReboot: &v1alpha1.AfterRebootMarks{Labels: map[string]v1alpha1.MarkValue{"example.com/rebooted": "yes"}},
	}
	createPool(t, pool)
	node := createNodes(t, "marks-gone", "marks-gone", 1)[0]
	// No daemon: the approved reboot never happens.
	harness.StartOperatorWith(t, bed, operator.Options{NodeReturnTimeout: 2 * time.Second})

	request(t, node, "r", time.Now())
	g.Eventually(func(g Gomega) {
		n := getNode(g, node)
		g.Expect(n.Annotations).To(HaveKey(protocol.NodeNotBack))
		g.Expect(n.Spec.Unschedulable).To(BeTrue())
		g.Expect(n.Labels).To(HaveKeyWithValue(lb, "true"), "still out of its load balancers")
		g.Expect(n.Spec.Taints).To(ContainElement(HaveField("Key", "example.com/rebooting")))
	}, timeout).Should(Succeed())

	g.Expect(gen.Reboot(ctx, bed.Client, node, "boot-0-r1", false)).To(Succeed())
	g.Eventually(func(g Gomega) {
		expectRebootedOnce(g, node, false)
		n := getNode(g, node)
		g.Expect(n.Labels).NotTo(HaveKey(lb))
		g.Expect(n.Labels).To(HaveKeyWithValue("example.com/rebooted", "yes"))
		for _, tn := range n.Spec.Taints {
			g.Expect(tn.Key).NotTo(Equal("example.com/rebooting"))
		}
	}, timeout).Should(Succeed())
}

// Between attempts the node is back in service and its slot free: another
// node of the pool reboots meanwhile.
func TestARetriedDrainFreesItsSlotBetweenAttempts(t *testing.T) {
	g := NewWithT(t)
	blocked := blockedDrainPool(t, "retry-slot", 2*time.Second, v1alpha1.DrainRetryAction,
		&v1alpha1.DrainRetry{MaxAttempts: 100, Backoff: &metav1.Duration{Duration: 5 * time.Second}})
	other := createNodes(t, "retry-slot-b", "retry-slot", 1)[0]
	budget := watchBudget(t, "retry-slot")
	daemons := runDaemons(t, "retry-slot", false)
	startOperator(t)

	request(t, blocked, "first", time.Now())
	g.Eventually(func(g Gomega) { g.Expect(getNode(g, blocked).Annotations).To(HaveKey(protocol.Admitted)) }, timeout).Should(Succeed())
	request(t, other, "second", time.Now())
	g.Eventually(func(g Gomega) {
		expectRebootedOnce(g, other, false)
		g.Expect(retryOf(g, blocked)).NotTo(BeNil(), "the blocked node is still being retried")
		g.Expect(getNode(g, blocked).Annotations).NotTo(HaveKey(protocol.DrainFailed))
	}, timeout).Should(Succeed())
	g.Expect(daemons.Count(blocked)).To(BeZero())
	most, _ := budget.MostUnavailable()
	g.Expect(most).To(Equal(1), "one at a time all along")
}
