package e2e_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/sim"
)

// TestRebootCompletesWithoutAMissingDaemon: a node whose daemon does not
// come back after its reboot holds its pool's slot, cordoned, for the
// operator's bound and no longer. Then the operator completes what it can
// prove (a new boot ID, Ready), uncordons the node, frees the slot, and says
// loudly that the daemon is missing; the daemon coming back later causes no
// second reboot.
func TestRebootCompletesWithoutAMissingDaemon(t *testing.T) {
	harness.RequireRoot(t)
	g := NewWithT(t)
	ctx := context.Background()
	const pool, bound = "amber", 10 * time.Minute
	lost, next := pool+"-000", pool+"-001"
	c, clk, t0, _ := twoNodesOnAFakeClock(t, pool, sim.Timing{Reboot: time.Second}, operator.Options{DaemonConfirmTimeout: bound})

	c.Node(lost).SetNoDaemonOnBoot(true)
	// The boot is read before the request: the reboot may be done by the
	// time RequestReboot returns (a second, on a slow machine).
	first := c.Node(lost).BootID()
	g.Expect(c.Node(lost).RequestReboot("kernel update")).To(Succeed())

	// Back, Ready with a new boot; no daemon clears the old boot's request.
	// The operator holds the node as it was, and writes nothing yet: most
	// daemons confirm within seconds.
	g.Eventually(func(g Gomega) {
		n := getNode(g, lost)
		st, err := protocol.Read(n)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.AwaitingDaemon()).To(BeTrue(), "back from the reboot, its daemon silent")
	}, timeout).Should(Succeed())
	g.Expect(c.Node(lost).Reboots()).To(Equal(1))
	// Its slot stays taken: the other node's request waits.
	g.Expect(c.Node(next).RequestReboot("kernel update")).To(Succeed())
	expectHeld := func(g Gomega) {
		n := getNode(g, lost)
		g.Expect(n.Spec.Unschedulable).To(BeTrue())
		g.Expect(n.Annotations).To(HaveKeyWithValue(protocol.RebootApproved, first))
		g.Expect(getNode(g, next).Annotations).NotTo(HaveKey(protocol.Admitted), "no slot for the next node")
		g.Expect(harness.MaintenancesOf(g, bed, lost)).To(ConsistOf(HaveField("Status.Phase", v1alpha1.PhaseRebooting)))
	}
	g.Eventually(func(g Gomega) {
		g.Expect(harness.MaintenancesOf(g, bed, next)).To(ConsistOf(HaveField("Status.Phase", v1alpha1.PhaseRequested)))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		expectHeld(g)
		g.Expect(getNode(g, lost).Annotations).NotTo(HaveKey(protocol.RebootUnconfirmed), "within the grace the wait is not written")
	}, 3*time.Second).Should(Succeed())

	// A minute on, the daemon still silent, the operator writes the wait
	// on the node, counting from when it first saw the node back, so that
	// no restart of its own lengthens it. A label on the node wakes the
	// gate, as any change to a node of the pool does.
	clk.SetTime(t0.Add(time.Minute))
	poke(g, lost, "0")
	g.Eventually(func(g Gomega) {
		n := getNode(g, lost)
		st, err := protocol.Read(n)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Unconfirmed).To(Equal(&protocol.UnconfirmedReboot{ApprovedBoot: first, BootID: st.BootID, Since: t0}))
	}, timeout).Should(Succeed())
	g.Consistently(expectHeld, 3*time.Second).Should(Succeed())

	// A second short of the bound, nothing changes.
	clk.SetTime(t0.Add(bound - time.Second))
	poke(g, lost, "1")
	g.Consistently(expectHeld, 3*time.Second).Should(Succeed())

	// At the bound the reboot is completed without the daemon.
	clk.SetTime(t0.Add(bound))
	poke(g, lost, "2")
	g.Eventually(func(g Gomega) {
		n := getNode(g, lost)
		g.Expect(n.Spec.Unschedulable).To(BeFalse(), "uncordoned: kmaint cordoned it")
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.RebootApproved))
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.Admitted))
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.Cordoned))
		g.Expect(n.Annotations).To(HaveKey(protocol.RebootUnconfirmed), "the node says its daemon is missing")
		g.Expect(harness.EventReasons(g, bed, "Node", lost, "Warning")).To(ContainElement(v1alpha1.DaemonMissingReason))

		nms := harness.MaintenancesOf(g, bed, lost)
		g.Expect(nms).To(HaveLen(1))
		nm := nms[0]
		g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		g.Expect(nm.Status.BootIDAfter).To(Equal(protocol.BootID(n)))
		g.Expect(nm.Status.Message).To(ContainSubstring("its daemon did not confirm the reboot"))
		d := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.DegradedCondition)
		g.Expect(d).NotTo(BeNil())
		g.Expect(d.Reason).To(Equal(v1alpha1.DaemonMissingReason))
		g.Expect(harness.EventReasons(g, bed, "NodeMaintenance", nm.Name, "Warning")).To(ContainElement(v1alpha1.DaemonMissingReason))

		p := harness.GetPool(g, bed, pool)
		g.Expect(p.Status.Degraded).To(BeEquivalentTo(1))
		cond := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.DegradedCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(cond.Message).To(ContainSubstring(lost + ": daemon missing"))
	}, timeout).Should(Succeed())
	// The slot is free: the next node reboots, once.
	g.Eventually(func(g Gomega) { harness.ExpectSettled(g, bed, next, false) }, timeout).Should(Succeed())
	g.Expect(c.Node(next).Reboots()).To(Equal(1))

	// The daemon comes back: it finds no request in its boot, the stale
	// approval is gone, and nothing reboots again.
	g.Expect(c.Node(lost).StartDaemon(ctx)).To(Succeed())
	g.Eventually(func(g Gomega) {
		harness.ExpectSettled(g, bed, lost, false)
		g.Expect(harness.GetPool(g, bed, pool).Status.Degraded).To(BeZero())
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(c.Node(lost).Reboots()).To(Equal(1))
		g.Expect(harness.MaintenancesOf(g, bed, lost)).To(ConsistOf(HaveField("Status.Phase", v1alpha1.PhaseSucceeded)))
	}, 3*time.Second).Should(Succeed())
}

// TestAnOperatorRestartedWhileADaemonIsAwaited: the operator keeps its wait
// for a node's daemon in memory for a minute, and a restart loses it. The
// operator that starts next, finding the node already back, cannot know
// since when, and writes the wait at once; so restarts lengthen the wait by
// at most the time before the first of them, however many follow.
func TestAnOperatorRestartedWhileADaemonIsAwaited(t *testing.T) {
	harness.RequireRoot(t)
	g := NewWithT(t)
	const pool, bound = "umber", 10 * time.Minute
	lost := pool + "-000"
	opts := operator.Options{DaemonConfirmTimeout: bound}
	c, clk, t0, op := twoNodesOnAFakeClock(t, pool, sim.Timing{Reboot: time.Second}, opts)

	c.Node(lost).SetNoDaemonOnBoot(true)
	// The boot is read before the request: the reboot may be done by the
	// time RequestReboot returns (a second, on a slow machine).
	first := c.Node(lost).BootID()
	g.Expect(c.Node(lost).RequestReboot("kernel update")).To(Succeed())
	awaiting := func(g Gomega) protocol.NodeState {
		st, err := protocol.Read(getNode(g, lost))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.AwaitingDaemon()).To(BeTrue(), "back from the reboot, its daemon silent")
		return st
	}
	g.Eventually(func(g Gomega) { awaiting(g) }, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(awaiting(g).Unconfirmed).To(BeNil(), "within the grace the wait is kept in memory")
	}, 2*time.Second).Should(Succeed())

	// The operator dies half a minute into the grace; the next one
	// writes the wait as soon as it looks, its clock still inside the
	// grace of its own sighting.
	g.Expect(op.Stop()).To(Succeed())
	restart := t0.Add(30 * time.Second)
	clk.SetTime(restart)
	opts.Clock = clk
	next, err := sim.StartOperator(context.Background(), bed.Config, opts)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = next.Stop() })
	g.Eventually(func(g Gomega) {
		st := awaiting(g)
		g.Expect(st.Unconfirmed).To(Equal(&protocol.UnconfirmedReboot{ApprovedBoot: first, BootID: st.BootID, Since: restart}))
	}, timeout).Should(Succeed())

	// A later restart finds the wait written and keeps its deadline: a
	// second short of it the node is held, at it the reboot completes.
	g.Expect(next.Stop()).To(Succeed())
	clk.SetTime(restart.Add(bound - time.Second))
	last, err := sim.StartOperator(context.Background(), bed.Config, opts)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = last.Stop() })
	g.Consistently(func(g Gomega) {
		n := getNode(g, lost)
		g.Expect(n.Spec.Unschedulable).To(BeTrue())
		g.Expect(n.Annotations).To(HaveKeyWithValue(protocol.RebootApproved, first))
	}, 3*time.Second).Should(Succeed())
	clk.SetTime(restart.Add(bound))
	poke(g, lost, "0")
	g.Eventually(func(g Gomega) {
		n := getNode(g, lost)
		g.Expect(n.Spec.Unschedulable).To(BeFalse())
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.RebootApproved))
		g.Expect(harness.MaintenancesOf(g, bed, lost)).To(ConsistOf(HaveField("Status.Phase", v1alpha1.PhaseSucceeded)))
	}, timeout).Should(Succeed())
	g.Expect(c.Node(lost).Reboots()).To(Equal(1))
}

// poke changes a label of the node, which wakes every controller that
// watches its pool's nodes.
func poke(g Gomega, name, value string) {
	n := getNode(g, name)
	base := n.DeepCopy()
	n.Labels["kmaint-test/poke"] = value
	g.Expect(bed.Client.Patch(context.Background(), n, client.MergeFrom(base))).To(Succeed())
}

// twoNodesOnAFakeClock starts a pool of two simulated nodes with real
// daemons and journals, maxUnavailable 1 under an independent watcher, and
// the operator with opts on a fake clock set to now, to the second, and
// returns the operator too. The operator's bounds are then crossed by
// setting the clock, not by waiting.
func twoNodesOnAFakeClock(t *testing.T, pool string, timing sim.Timing, opts operator.Options) (*sim.Cluster, *clocktesting.FakePassiveClock, time.Time, *sim.Operator) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	c, err := sim.Start(ctx, bed, sim.Config{
		Pools:   []sim.PoolSpec{{Name: pool, Nodes: 2, MaxUnavailable: intstr.FromInt32(1)}},
		Journal: sim.Journald,
		Timing:  timing,
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(c.Stop)
	harness.WatchBudget(t, bed, pool).FailAbove(1)
	t0 := time.Now().UTC().Truncate(time.Second)
	clk := clocktesting.NewFakePassiveClock(t0)
	opts.Clock = clk
	op, err := sim.StartOperator(ctx, bed.Config, opts)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = op.Stop() })
	return c, clk, t0, op
}
