package e2e_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/sim"
)

// TestOptOutsAndTheClusterStop, on nodes running the real daemon and
// journald, with the real operator: a node annotated do-not-disrupt and a
// node with a do-not-disrupt pod wait and say why (their requests, the
// pool, the plugin, a metric) while the third node of their pool takes the
// slot; lifted, each reboots, the pod's node with no event but its pod's
// deletion. Then the cluster-wide stop: nothing new is admitted in either
// pool, a node already draining finishes, and once resumed the rest reboot.
func TestOptOutsAndTheClusterStop(t *testing.T) {
	harness.RequireRoot(t)
	logStateOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	const web, db = "optout-web", "optout-db"
	c, err := sim.Start(ctx, bed, sim.Config{
		Pools: []sim.PoolSpec{
			{Name: web, Nodes: 3, MaxUnavailable: intstr.FromInt32(1)},
			{Name: db, Nodes: 2, MaxUnavailable: intstr.FromInt32(1)},
		},
		Journal: sim.Journald,
		Timing:  sim.Timing{Reboot: time.Second, DaemonRebootTimeout: time.Minute},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(c.Stop)
	harness.WatchBudget(t, bed, web).FailAbove(1)
	harness.WatchBudget(t, bed, db).FailAbove(1)
	addr := harness.FreeAddr(t)
	harness.StartOperatorWith(t, bed, operator.Options{MetricsAddr: addr, BlockingPodInterval: time.Second})
	t.Cleanup(func() { _ = bed.Client.DeleteAllOf(context.Background(), &v1alpha1.MaintenanceGate{}) })
	harness.CreateNamespace(t, bed, "optout")
	w := func(i int) string { return []string{web + "-000", web + "-001", web + "-002"}[i] }
	d := func(i int) string { return []string{db + "-000", db + "-001"}[i] }

	// Opt-outs: one node annotated by a person, one with a pod that must
	// not be disrupted.
	n := getNode(g, w(0))
	base := n.DeepCopy()
	// The node may not carry annotations yet: its daemon writes its first
	// ones as it starts.
	metav1.SetMetaDataAnnotation(&n.ObjectMeta, protocol.DoNotDisrupt, "payments freeze, ask #payments")
	g.Expect(bed.Client.Patch(ctx, n, client.MergeFrom(base))).To(Succeed())
	pod := gen.Pod("optout", "ledger", w(1), map[string]string{"app": "ledger"})
	pod.Annotations = map[string]string{protocol.KarpenterDoNotDisrupt: "true"}
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	g.Expect(gen.CreatePod(ctx, bed.Client, pod)).To(Succeed())

	for i := range 3 {
		g.Expect(c.Node(w(i)).RequestReboot("kernel 6.12")).To(Succeed())
	}
	g.Eventually(func() int { return c.Node(w(2)).Reboots() }, timeout).Should(Equal(1))
	waiting := func(node, reason, substring string) {
		g.Eventually(func(g Gomega) {
			nms := harness.MaintenancesOf(g, bed, node)
			g.Expect(nms).To(HaveLen(1))
			wc := meta.FindStatusCondition(nms[0].Status.Conditions, v1alpha1.WaitingCondition)
			g.Expect(wc).NotTo(BeNil())
			g.Expect(wc.Reason).To(Equal(reason))
			g.Expect(wc.Message).To(ContainSubstring(substring))
		}, timeout).Should(Succeed())
	}
	waiting(w(0), v1alpha1.DoNotDisruptReason, "payments freeze, ask #payments")
	waiting(w(1), v1alpha1.DoNotDisruptReason, "pod optout/ledger is annotated karpenter.sh/do-not-disrupt=true")
	g.Eventually(func(g Gomega) {
		p := harness.GetPool(g, bed, web)
		g.Expect(p.Status.OptedOut).To(BeEquivalentTo(2))
		g.Expect(meta.FindStatusCondition(p.Status.Conditions, v1alpha1.BlockedCondition).Reason).To(Equal(v1alpha1.OptedOutReason))
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) string { return harness.Scrape(g, addr) }, timeout).
		Should(ContainSubstring(`kmaint_pool_opted_out_nodes{pool="` + web + `"} 2`))
	var out bytes.Buffer
	g.Expect(cmd.Status(ctx, bed.Client, &out, cmd.StatusOptions{Pool: web, Output: cmd.OutputWide})).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("2 opted out"))
	g.Expect(out.String()).To(MatchRegexp(w(0) + `\s+` + web + `\s+Requested\s+opted out \(DoNotDisrupt\): node ` + w(0) + ` is annotated kmaint.io/do-not-disrupt`))
	g.Expect(out.String()).To(MatchRegexp(w(1) + `\s+` + web + `\s+Requested\s+opted out \(DoNotDisrupt\): node ` + w(1) + ` is not admitted while its pods say so`))

	// Lifted, each reboots once: the pod's node with no other event than
	// its pod's deletion, which the gate does not watch.
	n = getNode(g, w(0))
	base = n.DeepCopy()
	delete(n.Annotations, protocol.DoNotDisrupt)
	g.Expect(bed.Client.Patch(ctx, n, client.MergeFrom(base))).To(Succeed())
	g.Eventually(func() int { return c.Node(w(0)).Reboots() }, timeout).Should(Equal(1))
	g.Expect(bed.Client.Delete(ctx, pod)).To(Succeed())
	g.Eventually(func() int { return c.Node(w(1)).Reboots() }, timeout).Should(Equal(1))
	for i := range 3 {
		g.Eventually(func(g Gomega) { harness.ExpectSettled(g, bed, w(i), false) }, timeout).Should(Succeed())
	}

	// The cluster-wide stop. db-001 is draining first, held by a budget
	// that allows no disruption of its pod.
	slow := gen.Pod("optout", "primary", d(1), map[string]string{"app": "primary"})
	slow.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	g.Expect(gen.CreatePod(ctx, bed.Client, slow)).To(Succeed())
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "optout", Name: "primary"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "primary"}}},
	}
	g.Expect(bed.Client.Create(ctx, pdb)).To(Succeed())
	g.Expect(c.Node(d(1)).RequestReboot("firmware")).To(Succeed())
	g.Eventually(func(g Gomega) map[string]string { return getNode(g, d(1)).Annotations }, timeout).Should(HaveKey(protocol.Admitted))

	var said bytes.Buffer
	g.Expect(cmd.SetClusterPaused(ctx, bed.Client, &said, true, "incident 4711")).To(Succeed())
	g.Expect(said.String()).To(ContainSubstring("maintenancegate/cluster created, paused: incident 4711"))
	g.Expect(c.Node(d(0)).RequestReboot("firmware")).To(Succeed())
	g.Expect(c.Node(w(2)).RequestReboot("kernel 6.13")).To(Succeed())
	for _, pool := range []string{web, db} {
		g.Eventually(func(g Gomega) {
			bc := meta.FindStatusCondition(harness.GetPool(g, bed, pool).Status.Conditions, v1alpha1.BlockedCondition)
			g.Expect(bc.Reason).To(Equal(v1alpha1.ClusterPausedReason))
			g.Expect(bc.Message).To(ContainSubstring("incident 4711"))
			g.Expect(harness.EventReasons(g, bed, "MaintenancePool", pool, "Normal")).To(ContainElement(v1alpha1.ClusterPausedReason))
		}, timeout).Should(Succeed())
	}
	g.Eventually(func(g Gomega) {
		var waitingOn int
		for _, node := range []string{d(0), w(2)} {
			for _, nm := range harness.MaintenancesOf(g, bed, node) {
				if wc := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.WaitingCondition); wc != nil && wc.Reason == v1alpha1.ClusterPausedReason {
					waitingOn++
				}
			}
		}
		g.Expect(waitingOn).To(Equal(2))
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) string { return harness.Scrape(g, addr) }, timeout).Should(And(
		ContainSubstring("kmaint_cluster_paused 1"),
		ContainSubstring(`kmaint_pool_blocked{pool="`+db+`",reason="ClusterPaused"} 1`)))
	out.Reset()
	g.Expect(cmd.Status(ctx, bed.Client, &out, cmd.StatusOptions{})).To(Succeed())
	g.Expect(out.String()).To(HavePrefix("CLUSTER PAUSED (ClusterPaused): every pool is paused by MaintenanceGate cluster: incident 4711"))

	// The draining node finishes; its completion reconciles its pool,
	// which still admits no one.
	g.Expect(bed.Client.Delete(ctx, pdb)).To(Succeed())
	g.Eventually(func() int { return c.Node(d(1)).Reboots() }, timeout).Should(Equal(1))
	g.Eventually(func(g Gomega) { harness.ExpectSettled(g, bed, d(1), false) }, timeout).Should(Succeed())
	g.Expect(getNode(g, d(0)).Annotations).NotTo(HaveKey(protocol.Admitted))
	g.Expect(getNode(g, w(2)).Annotations).NotTo(HaveKey(protocol.Admitted))
	g.Expect(c.Node(d(0)).Reboots()+c.Node(w(2)).Reboots()).To(Equal(1), "only w(2)'s first reboot")

	said.Reset()
	g.Expect(cmd.SetClusterPaused(ctx, bed.Client, &said, false, "")).To(Succeed())
	g.Eventually(func() int { return c.Node(d(0)).Reboots() }, timeout).Should(Equal(1))
	g.Eventually(func() int { return c.Node(w(2)).Reboots() }, timeout).Should(Equal(2))
	g.Eventually(func(g Gomega) string { return harness.Scrape(g, addr) }, timeout).Should(ContainSubstring("kmaint_cluster_paused 0"))
}
