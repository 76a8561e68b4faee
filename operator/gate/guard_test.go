package gate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// checkInterval is the shortest interval health checks run at.
const checkInterval = v1alpha1.MinHealthCheckInterval

// guardedPool is a pool of maxUnavailable 1 with a settle time and, when
// query is set, a health check "node-ok" on it.
func guardedPool(name string, settle time.Duration, query string) *v1alpha1.MaintenancePool {
	pool := gen.Pool(name, intstr.FromInt32(1))
	pool.Spec.SettleTime = &metav1.Duration{Duration: settle}
	if query != "" {
		pool.Spec.HealthChecks = &v1alpha1.HealthChecks{Queries: []v1alpha1.HealthCheck{{Name: "node-ok", Query: query}},
			Interval: &metav1.Duration{Duration: checkInterval}}
	}
	return pool
}

// settleOf reads the node's settle record; nil when it has none.
func settleOf(g Gomega, node string) *protocol.Settle {
	st, err := protocol.Read(getNode(g, node))
	g.Expect(err).NotTo(HaveOccurred())
	return st.Settle
}

// halted returns the pool's Halted condition.
func halted(g Gomega, pool string) *metav1.Condition {
	c := meta.FindStatusCondition(getPool(g, pool).Status.Conditions, v1alpha1.HaltedCondition)
	g.Expect(c).NotTo(BeNil())
	return c
}

// badFor is a query result that names the node.
func badFor(node string) model.Vector {
	return model.Vector{{Metric: model.Metric{"node": model.LabelValue(node), "job": "app"}, Value: 0}}
}

// A rebooted node keeps its slot for the settle time, back in service;
// going NotReady starts its settle time again, and the next node waits.
func TestSettleTimeHoldsTheSlotAndStartsAgainAfterNotReady(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const pool, settle = "settle", 3 * time.Second
	createPool(t, guardedPool(pool, settle, ""))
	nodes := createNodes(t, pool, pool, 2)
	watchBudget(t, pool).FailAbove(1)
	daemons := runDaemons(t, pool, true)
	stop := startStoppableGate(t, gateOptions{})
	request(t, nodes[0], "s-0", time.Now())
	request(t, nodes[1], "s-1", time.Now().Add(time.Second))

	// Back, uncordoned, settling: its request says so, the next waits.
	var rec *protocol.Settle
	g.Eventually(func(g Gomega) {
		rec = settleOf(g, nodes[0])
		g.Expect(rec).NotTo(BeNil())
		g.Expect(getNode(g, nodes[0]).Spec.Unschedulable).To(BeFalse(), "in service while it settles")
		g.Expect(hostMaintenance(g, nodes[0]).Status.Phase).To(Equal(v1alpha1.PhaseSettling))
	}, timeout).Should(Succeed())
	g.Expect(rec.RebootedBoot).To(Equal("boot-0"))
	g.Expect(rec.BootID).To(Equal("boot-0-r1"))
	g.Expect(rec.Requests).To(ConsistOf("s-0"))
	g.Expect(rec.Until.Sub(rec.Since)).To(Equal(settle))
	g.Eventually(func(g Gomega) int32 { return getPool(g, pool).Status.Settling }, timeout).Should(BeEquivalentTo(1))
	g.Expect(daemons.Count(nodes[1])).To(BeZero())

	// NotReady: the settle time stops; Ready again, it starts again, also
	// for an operator that restarted meanwhile (it reads it on the node).
	g.Expect(gen.SetBoot(ctx, bed.Client, nodes[0], "boot-0-r1", false)).To(Succeed())
	g.Eventually(func(g Gomega) *protocol.Settle { return settleOf(g, nodes[0]) }, timeout).Should(HaveField("Until", BeZero()))
	g.Consistently(func(g Gomega) *protocol.Settle { return settleOf(g, nodes[0]) }, settle+time.Second, 200*time.Millisecond).ShouldNot(BeNil())
	stop()
	backAt := time.Now()
	g.Expect(gen.SetBoot(ctx, bed.Client, nodes[0], "boot-0-r1", true)).To(Succeed())
	startGate(t, gateOptions{})
	g.Eventually(func(g Gomega) *protocol.Settle { return settleOf(g, nodes[0]) }, timeout).Should(HaveField("Since", BeTemporally(">=", backAt.Truncate(time.Second))))
	g.Expect(daemons.Count(nodes[1])).To(BeZero(), "the next node waits while the first settles")

	// Settled: the slot goes to the next node, the request succeeds.
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[0], false) }, timeout).Should(Succeed())
	g.Expect(time.Since(backAt)).To(BeNumerically(">=", settle))
	g.Eventually(func(g Gomega) v1alpha1.Phase { return hostMaintenance(g, nodes[0]).Status.Phase }, timeout).Should(Equal(v1alpha1.PhaseSucceeded))
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "Node", nodes[0], "Normal") }, timeout).Should(ContainElement(v1alpha1.SettledReason))
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[1], false) }, timeout).Should(Succeed())
}

// A failed check halts the pool: the node keeps its slot, nothing is
// admitted, through an operator restart; a resume at a time before the
// failure resumes nothing, one at the failure's time does.
func TestFailedHealthCheckHaltsUntilResumed(t *testing.T) {
	g := NewWithT(t)
	const pool = "halt"
	createPool(t, guardedPool(pool, time.Second, `app_ready == 0`))
	nodes := createNodes(t, pool, pool, 2)
	watchBudget(t, pool).FailAbove(1)
	daemons := runDaemons(t, pool, true)
	q := &fakeQuerier{}
	q.set(badFor(nodes[0]), nil)
	stop := startStoppableGate(t, gateOptions{prometheus: q})
	request(t, nodes[0], "h-0", time.Now())
	request(t, nodes[1], "h-1", time.Now().Add(time.Second))

	var failure *protocol.HealthCheckFailure
	g.Eventually(func(g Gomega) {
		s := settleOf(g, nodes[0])
		g.Expect(s).NotTo(BeNil())
		g.Expect(s.Failure).NotTo(BeNil())
		failure = s.Failure
	}, timeout).Should(Succeed())
	g.Expect(failure.Check).To(Equal("node-ok"))
	g.Expect(failure.Value).To(Equal("0"))
	g.Expect(failure.Series).To(ContainSubstring(`job="app"`))
	g.Eventually(func(g Gomega) {
		c := halted(g, pool)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(v1alpha1.HealthCheckFailedReason))
		g.Expect(c.Message).To(And(ContainSubstring(nodes[0]), ContainSubstring(`"node-ok"`), ContainSubstring("returned 0")))
		p := getPool(g, pool)
		g.Expect(p.Status.Halt).NotTo(BeNil())
		g.Expect(p.Status.Halt.Resume).To(Equal(v1alpha1.ResumeManual))
		g.Expect(p.Status.Halt.Nodes).To(ConsistOf(HaveField("Node", nodes[0])))
		b := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.BlockedCondition)
		g.Expect(b.Reason).To(Equal(v1alpha1.HaltedReason))
		w := meta.FindStatusCondition(hostMaintenance(g, nodes[1]).Status.Conditions, v1alpha1.WaitingCondition)
		g.Expect(w).NotTo(BeNil())
		g.Expect(w.Reason).To(Equal(v1alpha1.HaltedReason))
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "MaintenancePool", pool, "Warning") }, timeout).
		Should(ContainElements(v1alpha1.HealthCheckFailedReason, v1alpha1.PoolHaltedReason))
	expectOneWriterPerStatusField(g, pool)

	// The operator restarts mid-halt: still halted, the failure as it was.
	stop()
	startGate(t, gateOptions{prometheus: q})
	q.set(nil, nil) // healthy again: a Manual pool stays halted
	g.Consistently(func(g Gomega) {
		g.Expect(settleOf(g, nodes[0]).Failure).To(Equal(failure))
		g.Expect(halted(g, pool).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(daemons.Count(nodes[1])).To(BeZero())
	}, 2*checkInterval, 500*time.Millisecond).Should(Succeed())
	warnings := harness.EventReasons(g, bed, "MaintenancePool", pool, "Warning")
	g.Expect(countOf(warnings, v1alpha1.HealthCheckFailedReason)).To(Equal(1), "one failure, whatever the restart: %v", warnings)
	g.Expect(countOf(warnings, v1alpha1.PoolHaltedReason)).To(Equal(1), "one halt, whatever the restart: %v", warnings)

	// A resume before the failure resumes nothing.
	resume := func(at time.Time) {
		harness.PatchPool(g, bed, pool, func(p *v1alpha1.MaintenancePool) {
			p.Annotations = map[string]string{v1alpha1.ResumeHaltAnnotation: at.UTC().Format(time.RFC3339)}
		})
	}
	resume(failure.Time.Add(-time.Second))
	g.Consistently(func(g Gomega) *protocol.Settle { return settleOf(g, nodes[0]) }, 2*time.Second, 200*time.Millisecond).ShouldNot(BeNil())
	// Nor does one far in the future, which would resume every failure
	// to come; the Halted condition says why.
	resume(time.Now().Add(24 * 365 * time.Hour))
	g.Eventually(func(g Gomega) string { return halted(g, pool).Message }, timeout).Should(ContainSubstring("lies in the future"))
	g.Consistently(func(g Gomega) *protocol.Settle { return settleOf(g, nodes[0]) }, 2*time.Second, 200*time.Millisecond).ShouldNot(BeNil())
	// At the failure's time, as status.halt shows it: resumed.
	resume(getPool(g, pool).Status.Halt.Nodes[0].Time.Time)
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[0], false) }, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(hostMaintenance(g, nodes[0]).Status.Conditions, v1alpha1.HealthyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(v1alpha1.HealthCheckResumedReason))
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "MaintenancePool", pool, "Normal") }, timeout).Should(ContainElement(v1alpha1.HealthCheckResumedReason))
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[1], false) }, 2*timeout).Should(Succeed())
	g.Expect(halted(g, pool).Status).To(Equal(metav1.ConditionFalse))
	g.Eventually(func(g Gomega) *v1alpha1.PoolHalt { return getPool(g, pool).Status.Halt }, timeout).Should(BeNil())
	expectOneWriterPerStatusField(g, pool)
}

// expectOneWriterPerStatusField asserts that no field of the pool's status
// has two writers: the gate and aftercare each apply their own part
// (poolstatus.GatePart, AftercarePart). Only the managers named count,
// when some are.
func expectOneWriterPerStatusField(g Gomega, pool string, managers ...string) {
	p := getPool(g, pool)
	shared, err := harness.StatusOwners(p, managers...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(shared).To(BeEmpty(), "fields of pool %s's status that two field managers own", pool)
	var writers []string
	for _, e := range p.ManagedFields {
		if e.Subresource == "status" {
			writers = append(writers, e.Manager+"/"+string(e.Operation))
		}
	}
	g.Expect(writers).To(ContainElements("kmaint-gate/Apply", "kmaint-aftercare/Apply"), "the status's writers")
}

// A pool that resumes OnRecovery goes on by itself once the failed node
// passes its checks for a whole settle time.
func TestOnRecoveryResumesWhenTheCheckPassesAgain(t *testing.T) {
	g := NewWithT(t)
	const pool = "recover"
	p := guardedPool(pool, time.Second, `app_ready == 0`)
	p.Spec.HealthChecks.Resume = v1alpha1.ResumeOnRecovery
	createPool(t, p)
	nodes := createNodes(t, pool, pool, 2)
	daemons := runDaemons(t, pool, true)
	q := &fakeQuerier{}
	q.set(badFor(nodes[0]), nil)
	startGate(t, gateOptions{prometheus: q})
	request(t, nodes[0], "r-0", time.Now())
	request(t, nodes[1], "r-1", time.Now().Add(time.Second))

	g.Eventually(func(g Gomega) {
		s := settleOf(g, nodes[0])
		g.Expect(s).NotTo(BeNil())
		g.Expect(s.Failure).NotTo(BeNil())
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) *v1alpha1.PoolHalt { return getPool(g, pool).Status.Halt }, timeout).Should(HaveField("Resume", v1alpha1.ResumeOnRecovery))
	q.set(nil, nil)
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[0], false) }, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "Node", nodes[0], "Normal") }, timeout).Should(ContainElement(v1alpha1.HealthCheckRecoveredReason))
	g.Eventually(func(g Gomega) int { return daemons.Count(nodes[1]) }, timeout).Should(Equal(1))
}

// Checks that cannot run pass no node and halt the pool, saying why,
// without recording a failure; the halt lifts once they run.
func TestUnavailableHealthChecksHoldAndLiftByThemselves(t *testing.T) {
	g := NewWithT(t)
	const pool = "noprom"
	createPool(t, guardedPool(pool, time.Second, `app_ready == 0`))
	nodes := createNodes(t, pool, pool, 2)
	daemons := runDaemons(t, pool, true)
	q := &fakeQuerier{}
	q.set(nil, errors.New("dial tcp 127.0.0.1:9: connection refused"))
	startGate(t, gateOptions{prometheus: q})
	request(t, nodes[0], "u-0", time.Now())
	request(t, nodes[1], "u-1", time.Now().Add(time.Second))

	g.Eventually(func(g Gomega) {
		c := halted(g, pool)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(v1alpha1.HealthCheckUnavailableReason))
		g.Expect(c.Message).To(ContainSubstring("connection refused"))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		s := settleOf(g, nodes[0])
		g.Expect(s).NotTo(BeNil(), "no node passes while the checks cannot run")
		g.Expect(s.Failure).To(BeNil(), "and none fails")
		g.Expect(daemons.Count(nodes[1])).To(BeZero())
	}, 2*checkInterval, 500*time.Millisecond).Should(Succeed())
	g.Expect(getPool(g, pool).Status.Halt).To(BeNil())

	q.set(nil, nil)
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[0], false) }, 2*timeout).Should(Succeed())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[1], false) }, 2*timeout).Should(Succeed())
}

// A settle record that cannot be read keeps the node's slot and never
// passes; a pool whose guard is removed releases its settling nodes.
func TestMalformedSettleKeepsItsSlotAndARemovedGuardReleases(t *testing.T) {
	g := NewWithT(t)
	const pool = "unguard"
	p := guardedPool(pool, time.Hour, "")
	p.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	createPool(t, p)
	now := time.Now()
	valid := protocol.Settle{BootID: "boot-0", RebootedBoot: "boot-old", Pool: pool, Since: now, Until: now.Add(time.Hour)}
	createNodes(t, pool+"-ok", pool, 1, gen.Annotations(protocol.Settling, protocol.Encode(valid)))
	createNodes(t, pool+"-bad", pool, 1, gen.Annotations(protocol.Settling, `{"bootID":`))
	waiting := createNodes(t, pool+"-wait", pool, 1)
	daemons := runDaemons(t, pool, true)
	startGate(t, gateOptions{})
	request(t, waiting[0], "w-0", time.Now())

	g.Eventually(func(g Gomega) {
		s := getPool(g, pool).Status
		g.Expect(s.Settling).To(BeEquivalentTo(2))
		g.Expect(s.Unavailable).To(BeEquivalentTo(2))
		g.Expect(meta.FindStatusCondition(s.Conditions, v1alpha1.BlockedCondition).Reason).To(Equal(v1alpha1.BudgetExhaustedReason))
	}, timeout).Should(Succeed())
	g.Consistently(func() int { return daemons.Count(waiting[0]) }, 2*time.Second).Should(BeZero())

	// The guard goes: the readable record is released, the other stays.
	harness.PatchPool(g, bed, pool, func(p *v1alpha1.MaintenancePool) { p.Spec.SettleTime = nil })
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, waiting[0], false) }, timeout).Should(Succeed())
	g.Expect(getNode(g, pool+"-ok-0").Annotations).NotTo(HaveKey(protocol.Settling))
	g.Expect(getNode(g, pool+"-bad-0").Annotations).To(HaveKey(protocol.Settling))
	g.Expect(getPool(g, pool).Status.Settling).To(BeEquivalentTo(1))
}

// A rollout's canaries go first, and the rest wait until they passed.
func TestCanariesGoFirst(t *testing.T) {
	g := NewWithT(t)
	const pool = "canary"
	p := guardedPool(pool, 2*time.Second, `app_ready == 0`)
	p.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(3))
	p.Spec.HealthChecks.Canaries = 1
	p.Spec.DesiredConfig = "os-1"
	createPool(t, p)
	nodes := createNodes(t, pool, pool, 4, gen.Annotations(protocol.CurrentConfig, "os-0"))
	daemons := runDaemons(t, pool, true)
	q := &fakeQuerier{}
	startGate(t, gateOptions{prometheus: q})
	for i, n := range nodes {
		request(t, n, "c-"+n, time.Now().Add(time.Duration(i)*time.Second))
	}

	g.Eventually(func(g Gomega) int { return daemons.Count(nodes[0]) }, timeout).Should(Equal(1))
	// The canary runs the config once it is back, as its daemon says.
	setCurrentConfig(g, nodes[0], "os-1")
	g.Eventually(func(g Gomega) {
		b := meta.FindStatusCondition(getPool(g, pool).Status.Conditions, v1alpha1.BlockedCondition)
		g.Expect(b).NotTo(BeNil())
		g.Expect(b.Reason).To(Equal(v1alpha1.CanariesReason))
		g.Expect(b.Message).To(ContainSubstring("0 of 1"))
		// The status says so too, for the waiting requests to quote.
		g.Expect(getPool(g, pool).Status.Canaries).To(Equal(&v1alpha1.CanaryStatus{Passed: 0, Want: 1}))
	}, timeout).Should(Succeed())
	g.Expect(daemons.Count(nodes[1]) + daemons.Count(nodes[2]) + daemons.Count(nodes[3])).To(BeZero())

	// Passed: the others go, up to maxUnavailable at once.
	for _, n := range nodes[1:] {
		g.Eventually(func(g Gomega) int { return daemons.Count(n) }, 2*timeout).Should(Equal(1), n)
	}
	g.Eventually(func(g Gomega) { g.Expect(getPool(g, pool).Status.Canaries).To(BeNil()) }, timeout).Should(Succeed())
}

// setCurrentConfig writes the config the node's daemon reports.
func setCurrentConfig(g Gomega, node, config string) {
	n := getNode(g, node)
	base := n.DeepCopy()
	metav1.SetMetaDataAnnotation(&n.ObjectMeta, protocol.CurrentConfig, config)
	g.Expect(bed.Client.Patch(context.Background(), n, client.MergeFrom(base))).To(Succeed())
}
