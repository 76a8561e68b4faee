package gate_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// These tests hold the gate to promises that a deliberate break of the
// product code (test/mutants) showed no test against the API server held
// it to.

// approvalsOfLeftBoots watches the node until the test ends and returns
// what it saw approved for a boot the node no longer ran when the approval
// was written: "approved X in boot Y".
func approvalsOfLeftBoots(t *testing.T, node string) func() []string {
	t.Helper()
	wc, err := client.NewWithWatch(bed.Config, client.Options{Scheme: bed.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &corev1.NodeList{}, client.MatchingFields{"metadata.name": node})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var mu sync.Mutex
	var wrong []string
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); w.Stop(); <-done })
	go func() {
		defer close(done)
		last := ""
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			approved := n.Annotations[protocol.RebootApproved]
			if approved != "" && approved != last && approved != protocol.BootID(n) {
				mu.Lock()
				wrong = append(wrong, fmt.Sprintf("approved %s in boot %s", approved, protocol.BootID(n)))
				mu.Unlock()
			}
			last = approved
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), wrong...)
	}
}

// A node admitted in one boot that reboots by other means before its
// approval, and asks again in its new boot, is released: its admission is
// of a boot that is gone, and its new requests are admitted for the boot
// that made them. The gate never approves the boot the node left (the
// operator is stopped over the reboot, so that it finds both at once).
func TestAnAdmissionOfABootTheNodeLeftIsNeverApproved(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	node := blockedDrainPool(t, "leftboot", 10*time.Minute, v1alpha1.DrainAbandonAction, nil)
	wrong := approvalsOfLeftBoots(t, node)
	daemons := runDaemons(t, "leftboot", true)
	stop := startOperator(t)

	request(t, node, "first", time.Now())
	g.Eventually(func(g Gomega) {
		st, err := protocol.Read(getNode(g, node))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Admission).NotTo(BeNil())
		g.Expect(st.Admission.BootID).To(Equal("boot-0"))
	}, timeout).Should(Succeed())
	stop()

	g.Expect(gen.Reboot(ctx, bed.Client, node, "boot-1", true)).To(Succeed())
	request(t, node, "second", time.Now())
	g.Expect(bed.Client.Delete(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "leftboot", Name: "db"}})).To(Succeed())
	startOperator(t)

	g.Eventually(func(g Gomega) {
		g.Expect(getNode(g, node).Status.NodeInfo.BootID).To(Equal("boot-1-r1"))
		expectSettled(g, node, false)
	}, timeout).Should(Succeed())
	g.Expect(daemons.Count(node)).To(Equal(1))
	g.Expect(wrong()).To(BeEmpty(), "approvals of a boot the node had left")
}

// A node that went NotReady and Ready again in its approved boot (a
// kubelet restart) did not reboot, even when its request is gone from it
// (a daemon that lost its journal, a person): it is not completed, and
// keeps its slot, cordoned, until a reboot brings a new boot ID.
func TestANodeStillInItsApprovedBootIsNotCompleted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createPool(t, gen.Pool("sameboot", intstr.FromInt32(1)))
	node := createNodes(t, "sameboot", "sameboot", 1)[0]
	startOperator(t)

	request(t, node, "r", time.Now())
	g.Eventually(func(g Gomega) {
		g.Expect(getNode(g, node).Annotations).To(HaveKeyWithValue(protocol.RebootApproved, "boot-0"))
	}, timeout).Should(Succeed())
	n := getNode(g, node)
	gen.SetReady(n, false)
	g.Expect(bed.Client.Status().Update(ctx, n)).To(Succeed())
	gen.SetReady(n, true)
	g.Expect(bed.Client.Status().Update(ctx, n)).To(Succeed())
	editNode(g, node, func(n *corev1.Node) { delete(n.Annotations, protocol.RebootRequested) })

	g.Consistently(func(g Gomega) {
		n := getNode(g, node)
		g.Expect(n.Annotations).To(HaveKeyWithValue(protocol.RebootApproved, "boot-0"), "not completed")
		g.Expect(n.Spec.Unschedulable).To(BeTrue(), "still cordoned")
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	g.Expect(gen.Reboot(ctx, bed.Client, node, "boot-1", true)).To(Succeed())
	g.Eventually(func(g Gomega) { expectSettled(g, node, false) }, timeout).Should(Succeed())
}

// A node released between two attempts of its drain takes the budget again
// when it is admitted again: while another node of the pool is down, it
// waits.
func TestANodeReleasedForADrainRetryIsAdmittedAgainOnlyWithinTheBudget(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const backoff = 3 * time.Second
	blocked := blockedDrainPool(t, "retrybudget", 2*time.Second, v1alpha1.DrainRetryAction,
		&v1alpha1.DrainRetry{MaxAttempts: 100, Backoff: &metav1.Duration{Duration: backoff}})
	other := createNodes(t, "retrybudget-b", "retrybudget", 1)[0]
	startOperator(t)

	request(t, blocked, "r", time.Now())
	g.Eventually(func(g Gomega) { g.Expect(getNode(g, blocked).Annotations).To(HaveKey(protocol.Admitted)) }, timeout).Should(Succeed())
	// The other node goes down while the first one drains: the pool is
	// over its budget by no doing of kmaint's.
	n := getNode(g, other)
	gen.SetReady(n, false)
	g.Expect(bed.Client.Status().Update(ctx, n)).To(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(retryOf(g, blocked)).NotTo(BeNil())
		g.Expect(getNode(g, blocked).Annotations).NotTo(HaveKey(protocol.Admitted))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getNode(g, blocked).Annotations).NotTo(HaveKey(protocol.Admitted), "admitted again with the other node down")
	}, backoff+3*time.Second, 200*time.Millisecond).Should(Succeed())

	n = getNode(g, other)
	gen.SetReady(n, true)
	g.Expect(bed.Client.Status().Update(ctx, n)).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(getNode(g, blocked).Annotations).To(HaveKey(protocol.Admitted)) }, timeout).Should(Succeed())
}

// A hook's Job that is gone before the gate saw it finish may have run:
// it is not made again, and its hook fails.
func TestAHookJobGoneBeforeItFinishedIsNotMadeAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h := newHeldJob(t, "hookvanished")
	node, jobs := h.node, h.jobs
	harness.StartOperatorWith(t, bed, operator.Options{HooksNamespace: h.ns})

	h.started(t, g)
	g.Eventually(func(g Gomega) { g.Expect(hookRecord(g, node).Hooks[0].JobUID).NotTo(BeEmpty()) }, timeout).Should(Succeed())
	g.Expect(bed.Client.Delete(ctx, jobs.Made()[0], client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(len(jobs.Made())).To(Equal(1), "Jobs made: the Job was made again")
		g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.RebootApproved))
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		f := hookRecord(g, node).Failed()
		g.Expect(f).NotTo(BeNil())
		g.Expect(f.Failure.Reason).To(Equal("HookJobLost"))
	}, timeout).Should(Succeed())
	g.Expect(jobs.Made()).To(HaveLen(1))
}
