package e2e_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/sim"
)

// A node back from its reboot whose daemon pod failed in the shutdown: the
// kubelet's graceful shutdown marks the daemon's pod Failed, and the
// DaemonSet controller replaces a failed pod only after a back-off that
// doubles with each failure on the node (up to 15 minutes). Once the daemon
// is late (ten seconds after the node was seen back), the gate deletes the
// node's failed daemon pods, so that the DaemonSet starts the daemon at
// once, well before it writes its wait for the daemon on the node (a
// minute); it leaves a running daemon pod and any other pod alone. An
// operator that dies after it wrote the wait and before it deleted the pods
// leaves the deletion to the next.
func TestTheFailedDaemonPodOfANodeBackFromItsRebootIsDeleted(t *testing.T) {
	harness.RequireRoot(t)
	g := NewWithT(t)
	const pool = "shale"
	lost, other := pool+"-000", pool+"-001"
	opts := operator.Options{DaemonConfirmTimeout: 10 * time.Minute}
	c, clk, t0, op := twoNodesOnAFakeClock(t, pool, sim.Timing{Reboot: time.Second}, opts)

	c.Node(lost).SetNoDaemonOnBoot(true)
	g.Expect(c.Node(lost).RequestReboot("kernel update")).To(Succeed())
	g.Eventually(func(g Gomega) {
		st, err := protocol.Read(getNode(g, lost))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.AwaitingDaemon()).To(BeTrue(), "back from the reboot, its daemon silent")
	}, timeout).Should(Succeed())
	// What the shutdown left, made after the drain (which would have
	// evicted pods the simulation does not own by a DaemonSet).
	const ns = "shale-system"
	harness.CreateNamespace(t, bed, ns)
	daemon := map[string]string{"app.kubernetes.io/name": "kmaint-daemon"}
	failedDaemon := createPodIn(g, ns, "kmaint-daemon-failed", lost, daemon, corev1.PodFailed)
	runningDaemon := createPodIn(g, ns, "kmaint-daemon-running", other, daemon, corev1.PodRunning)
	failedOther := createPodIn(g, ns, "other-failed", lost, map[string]string{"app.kubernetes.io/name": "other"}, corev1.PodFailed)
	// Within seconds most daemons confirm: nothing is deleted yet.
	g.Consistently(func(g Gomega) { expectPodExists(g, failedDaemon, true) }, 2*time.Second).Should(Succeed())

	// Ten seconds on, the daemon is late: the gate deletes the failed
	// daemon pod of that node only, its wait still in memory.
	clk.SetTime(t0.Add(10 * time.Second))
	poke(g, lost, "0")
	g.Eventually(func(g Gomega) { expectPodExists(g, failedDaemon, false) }, timeout).Should(Succeed())
	g.Expect(getNode(g, lost).Annotations).NotTo(HaveKey(protocol.RebootUnconfirmed), "the wait is not written yet")
	g.Consistently(func(g Gomega) {
		expectPodExists(g, runningDaemon, true)
		expectPodExists(g, failedOther, true)
	}, 2*time.Second).Should(Succeed())

	// A minute on the gate writes its wait.
	clk.SetTime(t0.Add(time.Minute))
	poke(g, lost, "1")
	g.Eventually(func(g Gomega) {
		g.Expect(getNode(g, lost).Annotations).To(HaveKey(protocol.RebootUnconfirmed))
	}, timeout).Should(Succeed())

	// The operator dies between its two writes: the wait is on the node,
	// a failed daemon pod is still there. The next operator, still
	// waiting for the daemon, deletes it.
	g.Expect(op.Stop()).To(Succeed())
	failedAgain := createPodIn(g, ns, "kmaint-daemon-failed-again", lost, daemon, corev1.PodFailed)
	clk.SetTime(t0.Add(2 * time.Minute))
	opts.Clock = clk
	next, err := sim.StartOperator(context.Background(), bed.Config, opts)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = next.Stop() })
	g.Eventually(func(g Gomega) {
		g.Expect(getNode(g, lost).Annotations).To(HaveKey(protocol.RebootUnconfirmed), "still waiting for the daemon")
		expectPodExists(g, failedAgain, false)
	}, timeout).Should(Succeed())
	g.Expect(c.Node(lost).Reboots()).To(Equal(1))
}

// createPodIn creates a pod bound to node with the labels, in phase.
func createPodIn(g Gomega, ns, name, node string, labels map[string]string, phase corev1.PodPhase) client.ObjectKey {
	ctx := context.Background()
	pod := gen.Pod(ns, name, node, labels)
	g.Expect(gen.CreatePod(ctx, bed.Client, pod)).To(Succeed())
	key := client.ObjectKeyFromObject(pod)
	g.Eventually(func(g Gomega) {
		var got corev1.Pod
		g.Expect(bed.Client.Get(ctx, key, &got)).To(Succeed())
		got.Status.Phase = phase
		g.Expect(bed.Client.Status().Update(ctx, &got)).To(Succeed())
	}, timeout).Should(Succeed())
	return key
}

func expectPodExists(g Gomega, key client.ObjectKey, exists bool) {
	err := bed.Client.Get(context.Background(), key, &corev1.Pod{})
	if exists {
		g.ExpectWithOffset(1, err).NotTo(HaveOccurred(), "%s still there", key)
		return
	}
	g.ExpectWithOffset(1, apierrors.IsNotFound(err)).To(BeTrue(), "%s deleted, got %v", key, err)
}
