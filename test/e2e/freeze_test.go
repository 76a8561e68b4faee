package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/sim"
)

// TestFreezePeriod, on nodes running the real daemon and journald, with the
// real operator and its real clock: during a pool's freeze, requests from
// the node wait and say so (the pool's Blocked and Frozen conditions, each
// NodeMaintenance's Waiting condition, kmaint_pool_frozen), while a request
// made with `kubectl kmaint request --ignore-freezes` passes; when the
// freeze ends, with nothing else happening, the rest are admitted and
// complete within the budget, and the pool says FreezeEnded.
func TestFreezePeriod(t *testing.T) {
	harness.RequireRoot(t)
	logStateOnFailure(t)
	g := NewWithT(t)
	ctx := context.Background()
	const pool = "freeze"
	c, err := sim.Start(ctx, bed, sim.Config{
		Pools:   []sim.PoolSpec{{Name: pool, Nodes: 4, MaxUnavailable: intstr.FromInt32(2)}},
		Journal: sim.Journald,
		Timing:  sim.Timing{Reboot: time.Second, DaemonRebootTimeout: time.Minute},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(c.Stop)
	harness.WatchBudget(t, bed, pool).FailAbove(2)
	n := func(i int) string { return fmt.Sprintf("%s-%03d", pool, i) }

	// The freeze ends 30s from now, whole seconds as the API keeps them.
	end := time.Now().Add(30 * time.Second).Truncate(time.Second)
	harness.PatchPool(g, bed, pool, func(p *v1alpha1.MaintenancePool) {
		p.Spec.Freezes = []v1alpha1.FreezePeriod{{Name: "release", Reason: "release day",
			Start: &metav1.Time{Time: end.Add(-time.Hour)}, End: &metav1.Time{Time: end}}}
	})
	addr := harness.FreeAddr(t)
	harness.StartOperatorWith(t, bed, operator.Options{MetricsAddr: addr})

	var out bytes.Buffer
	_, err = cmd.Request(ctx, bed.Client, &out, cmd.RequestOptions{Node: n(3), Reason: "CVE-2026-1234", IgnoreFreezes: true})
	g.Expect(err).NotTo(HaveOccurred())
	for i := range 3 {
		g.Expect(c.Node(n(i)).RequestReboot("kernel 6.12")).To(Succeed())
	}

	// While the freeze holds: the emergency passes, the rest wait.
	g.Eventually(func() int { return c.Node(n(3)).Reboots() }, timeout).Should(Equal(1))
	until := "until " + end.UTC().Format(time.RFC3339)
	g.Eventually(func(g Gomega) {
		p := harness.GetPool(g, bed, pool)
		b := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.BlockedCondition)
		g.Expect(b).NotTo(BeNil())
		g.Expect(b.Reason).To(Equal(v1alpha1.FrozenReason), "message %q", b.Message)
		g.Expect(b.Message).To(ContainSubstring("pool freeze's freeze release (release day) " + until))
		g.Expect(meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.FrozenCondition)).To(BeTrue())
		g.Expect(p.Status.Freeze).NotTo(BeNil())
		g.Expect(p.Status.Freeze.End.Time).To(BeTemporally("==", end))
		for i := range 3 {
			nms := harness.MaintenancesOf(g, bed, n(i))
			g.Expect(nms).To(HaveLen(1))
			w := meta.FindStatusCondition(nms[0].Status.Conditions, v1alpha1.WaitingCondition)
			g.Expect(w).NotTo(BeNil())
			g.Expect(w.Reason).To(Equal(v1alpha1.FrozenReason), "message %q", w.Message)
			g.Expect(w.Message).To(ContainSubstring("pool freeze's freeze release (release day) " + until))
		}
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) string { return harness.Scrape(g, addr) }, timeout).
		Should(ContainSubstring(`kmaint_pool_frozen{pool="` + pool + `"} 1`))
	g.Expect(harness.EventReasons(g, bed, "MaintenancePool", pool, "Normal")).To(ContainElement(v1alpha1.FreezeStartedReason))
	g.Expect(time.Now()).To(BeTemporally("<", end), "everything above was seen while the freeze held")
	for i := range 3 {
		g.Expect(c.Node(n(i)).Reboots()).To(Equal(0), "node %s rebooted during the freeze", n(i))
	}

	// The freeze ends: the rest go, two at a time, and the pool says so.
	for i := range 4 {
		g.Eventually(func() int { return c.Node(n(i)).Reboots() }, timeout).Should(Equal(1))
		g.Eventually(func(g Gomega) { harness.ExpectSettled(g, bed, n(i), false) }, timeout).Should(Succeed())
	}
	g.Eventually(func(g Gomega) {
		p := harness.GetPool(g, bed, pool)
		g.Expect(p.Status.Freeze).To(BeNil())
		g.Expect(meta.IsStatusConditionFalse(p.Status.Conditions, v1alpha1.FrozenCondition)).To(BeTrue())
		g.Expect(harness.EventReasons(g, bed, "MaintenancePool", pool, "Normal")).To(ContainElement(v1alpha1.FreezeEndedReason))
		for i := range 4 {
			nms := harness.MaintenancesOf(g, bed, n(i))
			g.Expect(nms).To(HaveLen(1))
			g.Expect(nms[0].Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		}
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) string { return harness.Scrape(g, addr) }, timeout).
		Should(ContainSubstring(`kmaint_pool_frozen{pool="` + pool + `"} 0`))
}
