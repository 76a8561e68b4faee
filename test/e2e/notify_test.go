package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/operator/notify"
	"github.com/kmaint/kmaint/test/chatrecv"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/sim"
)

// TestNotificationsOfARolloutAndADrainGivenUp: with the real operator and
// daemons, a rollout sends "started" and "finished" with the pool's name
// to a local chat receiver, and a drain given up at its timeout sends one
// message. A second receiver hangs on the first message it is sent until
// the test ends: the rollout completes all the same, so no reboot waited
// for it, and the notifier counts its failure.
func TestNotificationsOfARolloutAndADrainGivenUp(t *testing.T) {
	logStateOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	const pool, blocker = "chat", "chat-blocker"
	good, hanging := chatrecv.Start(t), chatrecv.Start(t)
	hanging.SetMode(chatrecv.Hang)
	urls := filepath.Join(t.TempDir(), "urls")
	g.Expect(os.WriteFile(urls, []byte(hanging.URL()+"\n"+good.URL()+"\n"), 0o600)).To(Succeed())

	c, err := sim.Start(ctx, bed, sim.Config{
		Pools:   []sim.PoolSpec{{Name: pool, Nodes: 3, MaxUnavailable: intstr.FromInt32(1), DrainTimeout: 3 * time.Second, OnDrainTimeout: v1alpha1.DrainAbandonAction}},
		Journal: sim.Memory,
		Timing:  sim.Timing{Reboot: time.Second},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { cleanUpNodes(t, c.Nodes(), pool) })
	t.Cleanup(c.Stop)
	op, err := sim.StartOperator(ctx, bed.Config, operator.Options{Notify: notify.Options{
		URLsFile: urls, Interval: time.Second, SendTimeout: time.Second, Title: "e2e"}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = op.Stop() }) // the last one started
	g.Eventually(func(g Gomega) {
		g.Expect(harness.GetPool(g, bed, pool).Status.Nodes).To(Equal(int32(3)))
	}, timeout).Should(Succeed())

	rollout := time.Now()
	harness.PatchPool(g, bed, pool, func(p *v1alpha1.MaintenancePool) { p.Spec.DesiredConfig = "os-2" })
	g.Eventually(func(g Gomega) {
		g.Expect(good.Texts()).To(ContainElement(ContainSubstring(
			"RolloutFinished, pool chat: Rollout of config os-2 finished: all 3 nodes run it")))
	}, timeout).Should(Succeed())
	t.Logf("The rollout of 3 nodes took %s", time.Since(rollout).Round(time.Millisecond))
	for _, n := range c.Nodes() {
		harness.ExpectSettled(g, bed, n.Name(), false)
		g.Expect(n.Reboots()).To(Equal(1), n.Name())
	}
	g.Expect(good.Texts()).To(ContainElement(ContainSubstring(
		"RolloutStarted, pool chat: Rollout of config os-2 started: 3 of 3 nodes to reboot into it")))
	g.Expect(hanging.Requests()).To(Equal(1), "the hanging receiver is not asked again while it hangs")
	g.Expect(hanging.Hanging()).To(Equal(1), "it still hangs: the rollout did not wait for it")
	g.Expect(messagesTo(g, "1-generic", "failed")).To(BeNumerically(">=", 1))

	// A pod whose budget allows no disruption holds a drain past the
	// pool's timeout.
	undrained := c.Nodes()[0].Name()
	pod := newBlockingPod(ctx, g, blocker, undrained)
	t.Cleanup(func() {
		_ = bed.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0))
		_ = bed.Client.Delete(context.Background(), &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceDefault, Name: blocker}})
	})
	g.Expect(c.Node(undrained).RequestReboot("kernel update")).To(Succeed())
	g.Eventually(good.Texts, timeout).Should(ContainElement(ContainSubstring(
		"Warning DrainFailed, pool chat: drain of node " + undrained + " did not finish within 3s")))
	// A later event of the same watch orders the check: once it is sent,
	// the node's copy of DrainFailed would have been too.
	harness.PatchPool(g, bed, pool, func(p *v1alpha1.MaintenancePool) { p.Spec.Paused = true; p.Spec.DesiredConfig = "os-3" })
	g.Eventually(good.Texts, timeout).Should(ContainElement(ContainSubstring("Rollout of config os-3 started")))
	g.Expect(strings.Count(strings.Join(good.Texts(), "\n"), "DrainFailed")).To(Equal(1), "one message line per drain: %q", good.Texts())

	// A restarted operator (a new leader) sends what happens from then on,
	// and nothing it finds already recorded.
	g.Expect(op.Stop()).To(Succeed())
	op, err = sim.StartOperator(ctx, bed.Config, operator.Options{Notify: notify.Options{
		URLsFile: urls, Interval: time.Second, SendTimeout: time.Second, Title: "e2e"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		g.Expect(harness.GetPool(g, bed, pool).Status.ObservedGeneration).To(Equal(harness.GetPool(g, bed, pool).Generation))
	}, timeout).Should(Succeed())
	harness.PatchPool(g, bed, pool, func(p *v1alpha1.MaintenancePool) { p.Spec.DesiredConfig = "os-4" })
	g.Eventually(good.Texts, timeout).Should(ContainElement(ContainSubstring("Rollout of config os-4 started")))
	all := strings.Join(good.Texts(), "\n")
	for _, once := range []string{"os-2 started", "os-2 finished", "os-3 started", "os-4 started", "DrainFailed"} {
		g.Expect(strings.Count(all, once)).To(Equal(1), "%s, once: %q", once, all)
	}
}

// newBlockingPod creates a running pod on node with a budget that allows
// no disruption of it, so that no drain can evict it.
func newBlockingPod(ctx context.Context, g Gomega, name, node string) *corev1.Pod {
	g.Expect(createScenarioPod(ctx, name, node, name)).To(Succeed())
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceDefault, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
	}
	g.Expect(bed.Client.Create(ctx, pdb)).To(Succeed())
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceDefault, Name: name}}
}

// messagesTo reads the operator's count of notification messages to a
// receiver with a result.
func messagesTo(g Gomega, receiver, result string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != notify.MessagesMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["receiver"] == receiver && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
