package gate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

func absoluteFreeze(name, reason string, start, end time.Time) v1alpha1.FreezePeriod {
	return v1alpha1.FreezePeriod{Name: name, Reason: reason, Start: &metav1.Time{Time: start}, End: &metav1.Time{Time: end}}
}

// apiRequest creates a NodeMaintenance with the given settings and raises
// it on the node, as the node's daemon would.
func apiRequest(t *testing.T, g Gomega, name, node string, ignoreWindows, ignoreFreezes bool) {
	t.Helper()
	ctx := context.Background()
	nm := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: node, Reason: "kernel", IgnoreWindows: ignoreWindows, IgnoreFreezes: ignoreFreezes},
	}
	g.Expect(bed.Client.Create(ctx, nm)).To(Succeed())
	g.Expect(gen.Request(ctx, bed.Client, node, string(nm.UID), v1alpha1.SourceAPI, time.Now())).To(Succeed())
}

func expectMaintenanceWaiting(g Gomega, name, reason string, substrings ...string) {
	g.Eventually(func(g Gomega) {
		nm := getMaintenance(g, name)
		g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseRequested))
		c := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.WaitingCondition)
		g.Expect(c).NotTo(BeNil(), "Waiting condition of %s", name)
		g.Expect(c.Reason).To(Equal(reason), "message %q", c.Message)
		for _, s := range substrings {
			g.Expect(c.Message).To(ContainSubstring(s))
		}
	}, timeout).Should(Succeed())
}

func countReason(reasons []string, reason string) int {
	n := 0
	for _, r := range reasons {
		if r == reason {
			n++
		}
	}
	return n
}

// A pool freeze admits nothing new, whatever the budget and the windows
// say: a host request and one that ignores windows wait, said as Frozen on
// the pool and on the NodeMaintenance; a request with ignoreFreezes passes,
// and takes the budget only it needs.
func TestPoolFreezeAdmitsOnlyRequestsThatIgnoreFreezes(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(now)
	end := time.Date(2026, 12, 27, 0, 0, 0, 0, time.UTC)
	pool := gen.Pool("frz", intstr.FromInt32(3))
	pool.Spec.Freezes = []v1alpha1.FreezePeriod{absoluteFreeze("season", "shopping season", now.Add(-24*time.Hour), end)}
	createPool(t, pool)
	nodes := createNodes(t, "frz", "frz", 3)
	daemons := runDaemons(t, "frz", false)
	startGate(t, gateOptions{clock: clk})

	request(t, nodes[0], "frz-host", time.Now())
	apiRequest(t, g, "frz-windows", nodes[1], true, false)
	expectBlocked(g, "frz", v1alpha1.FrozenReason, "pool frz's freeze season (shopping season) until 2026-12-27T00:00:00Z", "2 nodes waiting")
	expectMaintenanceWaiting(g, "frz-windows", v1alpha1.FrozenReason, "pool frz's freeze season", "until 2026-12-27T00:00:00Z")
	expectWaiting(g, nodes[0], v1alpha1.FrozenReason, "pool frz's freeze season")
	g.Eventually(func(g Gomega) {
		p := getPool(g, "frz")
		g.Expect(p.Status.Freeze).NotTo(BeNil())
		g.Expect(p.Status.Freeze.Name).To(Equal("season"))
		g.Expect(p.Status.Freeze.Reason).To(Equal("shopping season"))
		g.Expect(p.Status.Freeze.End.Time).To(BeTemporally("==", end))
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.FrozenCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(v1alpha1.FrozenReason))
		g.Expect(c.Message).To(ContainSubstring("ignoreFreezes"))
		g.Expect(harness.EventReasons(g, bed, "MaintenancePool", "frz", "Normal")).To(ContainElement(v1alpha1.FreezeStartedReason))
	}, timeout).Should(Succeed())

	// The emergency passes the freeze.
	apiRequest(t, g, "frz-emergency", nodes[2], false, true)
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[2], false) }, timeout).Should(Succeed())
	for _, n := range nodes[:2] {
		g.Expect(getNode(g, n).Annotations).NotTo(HaveKey(protocol.Admitted))
		g.Expect(daemons.Count(n)).To(Equal(0))
	}
	expectBlocked(g, "frz", v1alpha1.FrozenReason, "2 nodes waiting")
	g.Expect(countReason(harness.EventReasons(g, bed, "MaintenancePool", "frz", "Normal"), v1alpha1.FreezeStartedReason)).
		To(Equal(1), "one FreezeStarted however often the pool reconciles")
}

// The freeze ends on its own: the gate wakes at its end (nothing else
// happens to reconcile the pool), admits the waiting nodes, clears
// status.freeze and says FreezeEnded; kmaint_pool_frozen follows. An
// operator restarted during the freeze says FreezeStarted no second time.
func TestPoolFreezeEndsAndWaitingNodesGo(t *testing.T) {
	g := NewWithT(t)
	end := time.Now().Add(15 * time.Second).Truncate(time.Second)
	pool := gen.Pool("thaw", intstr.FromInt32(2))
	pool.Spec.Freezes = []v1alpha1.FreezePeriod{absoluteFreeze("deploy", "", end.Add(-time.Hour), end)}
	createPool(t, pool)
	nodes := createNodes(t, "thaw", "thaw", 2)
	runDaemons(t, "thaw", false)
	addr := harness.FreeAddr(t)
	stop := harness.StartOperatorWith(t, bed, operator.Options{MetricsAddr: addr})
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "MaintenancePool", "thaw", "Normal") }, timeout).
		Should(ContainElement(v1alpha1.FreezeStartedReason))
	// The event goes out in the reconcile that writes status.freeze, just
	// before the write: an operator stopped in between tells the freeze
	// again, once, after its restart (at least once, never lost). The
	// restart here comes after the write.
	g.Eventually(func(g Gomega) *v1alpha1.ActiveFreeze { return getPool(g, "thaw").Status.Freeze }, timeout).ShouldNot(BeNil())
	stop()
	harness.StartOperatorWith(t, bed, operator.Options{MetricsAddr: addr})
	for i, n := range nodes {
		request(t, n, "thaw"+n, time.Now().Add(time.Duration(i)*time.Second))
	}
	expectBlocked(g, "thaw", v1alpha1.FrozenReason, "pool thaw's freeze deploy until")
	g.Eventually(func(g Gomega) string { return harness.Scrape(g, addr) }, timeout).Should(ContainSubstring(`kmaint_pool_frozen{pool="thaw"} 1`))
	g.Expect(time.Now()).To(BeTemporally("<", end), "the test checks the freeze while it is in force")
	for _, n := range nodes {
		g.Expect(getNode(g, n).Annotations).NotTo(HaveKey(protocol.Admitted))
	}

	for _, n := range nodes {
		g.Eventually(func(g Gomega) { expectRebootedOnce(g, n, false) }, timeout).Should(Succeed())
	}
	g.Eventually(func(g Gomega) {
		p := getPool(g, "thaw")
		g.Expect(p.Status.Freeze).To(BeNil())
		g.Expect(meta.IsStatusConditionFalse(p.Status.Conditions, v1alpha1.FrozenCondition)).To(BeTrue())
		g.Expect(harness.EventReasons(g, bed, "MaintenancePool", "thaw", "Normal")).To(ContainElement(v1alpha1.FreezeEndedReason))
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) string { return harness.Scrape(g, addr) }, timeout).Should(ContainSubstring(`kmaint_pool_frozen{pool="thaw"} 0`))
	g.Expect(countReason(harness.EventReasons(g, bed, "MaintenancePool", "thaw", "Normal"), v1alpha1.FreezeEndedReason)).To(Equal(1))
	g.Expect(countReason(harness.EventReasons(g, bed, "MaintenancePool", "thaw", "Normal"), v1alpha1.FreezeStartedReason)).
		To(Equal(1), "the restarted operator read the freeze from the pool's status")
}

// A RebootPolicy's freeze holds that policy's requests only; its requests
// say which policy's freeze and until when.
func TestPolicyFreezeHoldsItsRequestsOnly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(now)
	policy := rebootPolicy("pf-kernel")
	policy.Spec.Freezes = []v1alpha1.FreezePeriod{absoluteFreeze("quiet", "on-call handover", now.Add(-time.Hour), now.Add(48*time.Hour))}
	g.Expect(bed.Client.Create(ctx, policy)).To(Succeed())
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), policy) })
	createPool(t, gen.Pool("pf", intstr.FromInt32(3)))
	nodes := createNodes(t, "pf", "pf", 2)
	daemons := runDaemons(t, "pf", false)
	startGate(t, gateOptions{clock: clk})

	policyRequest(t, "pf-kernel-0", nodes[0], "pf-kernel")
	request(t, nodes[1], "pf-host", time.Now())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[1], false) }, timeout).Should(Succeed())
	expectMaintenanceWaiting(g, "pf-kernel-0", v1alpha1.FrozenReason, "RebootPolicy pf-kernel's freeze quiet (on-call handover) until 2026-11-27T12:00:00Z")
	expectBlocked(g, "pf", v1alpha1.FrozenReason, "RebootPolicy pf-kernel's freeze quiet", "1 nodes waiting")
	g.Expect(daemons.Count(nodes[0])).To(Equal(0))
	p := getPool(g, "pf")
	g.Expect(p.Status.Freeze).To(BeNil(), "a policy's freeze is not the pool's")
	g.Expect(meta.IsStatusConditionFalse(p.Status.Conditions, v1alpha1.FrozenCondition)).To(BeTrue())
}

// A freeze the operator cannot read (a time zone the API server let
// through) freezes the pool, fail closed, and says which and why; a
// request with ignoreFreezes still passes.
func TestUnreadablePoolFreezeFailsClosed(t *testing.T) {
	g := NewWithT(t)
	pool := gen.Pool("frz-bad", intstr.FromInt32(2))
	pool.Spec.Freezes = []v1alpha1.FreezePeriod{{Name: "fridays", Schedule: "0 0 * * 5", Duration: &metav1.Duration{Duration: 72 * time.Hour}, TimeZone: "Mars/Olympus"}}
	createPool(t, pool)
	nodes := createNodes(t, "frz-bad", "frz-bad", 2)
	daemons := runDaemons(t, "frz-bad", false)
	startOperator(t)
	request(t, nodes[0], "frz-bad-host", time.Now())
	expectBlocked(g, "frz-bad", v1alpha1.InvalidFreezeReason, `freeze "fridays" of pool frz-bad cannot be read`, "Mars/Olympus")
	expectWaiting(g, nodes[0], v1alpha1.InvalidFreezeReason, "Mars/Olympus")
	g.Eventually(func(g Gomega) {
		p := getPool(g, "frz-bad")
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.FrozenCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(v1alpha1.InvalidFreezeReason))
		g.Expect(harness.EventReasons(g, bed, "MaintenancePool", "frz-bad", "Warning")).To(ContainElement(v1alpha1.InvalidFreezeReason))
	}, timeout).Should(Succeed())

	apiRequest(t, g, "frz-bad-emergency", nodes[1], false, true)
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[1], false) }, timeout).Should(Succeed())
	g.Expect(daemons.Count(nodes[0])).To(Equal(0))
	g.Expect(getNode(g, nodes[0]).Annotations).NotTo(HaveKey(protocol.Admitted))
}

// The biggest freezes the API accepts (32 of them, 63-character names,
// 512-character reasons, 366 days starting every minute) are evaluated and
// written back: the pool is frozen and says so.
func TestBiggestFreezesWorkEndToEnd(t *testing.T) {
	g := NewWithT(t)
	pool := gen.Pool("frz-big", intstr.FromInt32(1))
	for i := range v1alpha1.MaxFreezes {
		name := fmt.Sprintf("f%02d-%s", i, strings.Repeat("x", 59))
		pool.Spec.Freezes = append(pool.Spec.Freezes, v1alpha1.FreezePeriod{Name: name, Reason: strings.Repeat("r", 512),
			Schedule: "* * * * *", Duration: &metav1.Duration{Duration: 8784 * time.Hour}, TimeZone: "Europe/Berlin"})
	}
	createPool(t, pool)
	nodes := createNodes(t, "frz-big", "frz-big", 1)
	startOperator(t)
	request(t, nodes[0], "frz-big-host", time.Now())
	expectBlocked(g, "frz-big", v1alpha1.FrozenReason, "pool frz-big's freeze f")
	g.Eventually(func(g Gomega) {
		p := getPool(g, "frz-big")
		g.Expect(p.Status.Freeze).NotTo(BeNil())
		g.Expect(p.Status.Freeze.Reason).To(HaveLen(512))
		g.Expect(p.Status.Freeze.End.Time).To(BeTemporally(">", time.Now().Add(time.Hour)))
		g.Expect(meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.FrozenCondition)).To(BeTrue())
	}, timeout).Should(Succeed())
	g.Expect(getNode(g, nodes[0]).Annotations).NotTo(HaveKey(protocol.Admitted))
}
