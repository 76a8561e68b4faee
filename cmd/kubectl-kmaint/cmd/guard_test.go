package cmd_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// A kernel rollout halted at its third node, as the gate leaves it: the
// first node settled, the second settles with its checks passing, the
// third failed its check and holds its slot, the fourth waits. Status
// names the halted pool, the node, the check, the value and the command
// that resumes it; each node's row says how it stands. Resume writes the
// latest failure's time and names the node it resumes; a second resume
// says it is done already.
func TestStatusAndResumeOfAHaltedPool(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	failedAt := time.Now().UTC().Add(-3 * time.Minute).Truncate(time.Second)
	pool := gen.Pool("hlt", intstr.FromInt32(2))
	pool.Spec.DesiredConfig = "kernel-6.12.9"
	pool.Spec.SettleTime = &metav1.Duration{Duration: 10 * time.Minute}
	pool.Spec.HealthChecks = &v1alpha1.HealthChecks{Queries: []v1alpha1.HealthCheck{{Name: "node-ready", Query: `kube_node_status_condition{condition="Ready",status="true"} == 0`}}}
	harness.CreateTemporary(t, bed, pool)
	settlingSince := failedAt.Add(-time.Minute)
	nodes := []string{"hlt-0", "hlt-1", "hlt-2", "hlt-3"}
	harness.CreateNodes(t, bed, "hlt", "hlt", 1)
	createNode(t, "hlt-1", "hlt", protocol.Settle{BootID: "b1", RebootedBoot: "b0", Pool: "hlt", Requests: []string{"r1"},
		Since: settlingSince, Until: settlingSince.Add(10 * time.Minute)})
	createNode(t, "hlt-2", "hlt", protocol.Settle{BootID: "b1", RebootedBoot: "b0", Pool: "hlt", Requests: []string{"r2"},
		Since: failedAt.Add(-30 * time.Second), Until: failedAt.Add(570 * time.Second),
		Failure: &protocol.HealthCheckFailure{Check: "node-ready", Value: "0", Series: `kube_node_status_condition{node="hlt-2"}`, Time: failedAt}})
	g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node("hlt-3", gen.Labels("pool", "hlt"), gen.BootID("b0"),
		gen.RequestedIDs("b0", v1alpha1.SourceConfig, failedAt.Add(-time.Hour), "r3")))).To(Succeed())
	t.Cleanup(func() { deleteNodes(t, nodes[1:]...) })
	createSettling(t, "hlt-1", metav1.ConditionUnknown, v1alpha1.HealthCheckingReason, "checks pass so far")
	createSettling(t, "hlt-2", metav1.ConditionFalse, v1alpha1.HealthCheckFailedReason, `health check "node-ready" returned 0`)

	// The pool's status, as the gate writes it when the check fails.
	p := harness.GetPool(g, bed, "hlt")
	p.Status.ObservedGeneration = p.Generation
	p.Status.Nodes, p.Status.Unavailable, p.Status.MaxUnavailable, p.Status.Settling, p.Status.PendingRequests = 4, 2, 2, 2, 1
	p.Status.Halt = &v1alpha1.PoolHalt{Since: metav1.NewTime(failedAt), Resume: v1alpha1.ResumeManual, Nodes: []v1alpha1.HaltedNode{{
		Node: "hlt-2", Check: "node-ready", Value: "0", Time: metav1.NewTime(failedAt),
		Message: `health check "node-ready" returned 0 (kube_node_status_condition{node="hlt-2"})`,
	}}}
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.HaltedCondition, Status: metav1.ConditionTrue,
		Reason: v1alpha1.HealthCheckFailedReason, Message: "node hlt-2 failed health check node-ready (0)", LastTransitionTime: metav1.NewTime(failedAt)})
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.BlockedCondition, Status: metav1.ConditionTrue,
		Reason: v1alpha1.HaltedReason, Message: "halted", LastTransitionTime: metav1.NewTime(failedAt)})
	g.Expect(bed.Client.Status().Update(ctx, p)).To(Succeed())

	out, err := run(t, "status", "--pool", "hlt")
	g.Expect(err).NotTo(HaveOccurred())
	t.Log("\n" + out)
	g.Expect(out).To(MatchRegexp(`(?m)^hlt\s+4\s+\S+ \d/4 updated\s+2/2\s+1\s+HALTED: hlt-2 failed node-ready, 2 settling$`))
	g.Expect(out).NotTo(ContainSubstring("Blocked: Halted"), "the halt is said once, in its own words")
	g.Expect(out).To(MatchRegexp(`(?m)^hlt-0\s+hlt\s+Idle\s+-$`))
	g.Expect(out).To(MatchRegexp(`(?m)^hlt-1\s+hlt\s+Settling\s+settling until ` + stamp(settlingSince.Add(10*time.Minute)) + `; health checks pass so far$`))
	g.Expect(out).To(MatchRegexp(`(?m)^hlt-2\s+hlt\s+Settling\s+health check "node-ready" failed \(value 0\) at ` + stamp(failedAt) + `; pool hlt ha…$`))
	wide, err := run(t, "status", "--pool", "hlt", "-o", "wide")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wide).To(ContainSubstring(`; pool hlt halted: kubectl kmaint resume hlt; series kube_node_status_condition{node="hlt-2"}`))
	g.Expect(out).To(MatchRegexp(`(?m)^hlt-3\s+hlt\s+Requested\s+config: `))
	g.Expect(out).To(MatchRegexp(`Pool hlt is HALTED since ` + stamp(failedAt) + ` \(3m[0-9s]* ago\): no node is admitted until it is resumed.\n` +
		`  node hlt-2: health check "node-ready" failed with value 0 at ` + stamp(failedAt) + "\n"))
	g.Expect(out).To(ContainSubstring("  look:      kubectl describe node hlt-2; kubectl kmaint history hlt-2\n"))
	g.Expect(out).To(ContainSubstring("  resume:    kubectl kmaint resume hlt "))
	g.Expect(out).To(ContainSubstring("  roll back: kubectl kmaint rollout hlt --config <the config before kernel-6.12.9>, then resume"))

	// Resume writes the failure's time and says which node it resumes.
	out, err = run(t, "resume", "hlt")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("maintenancepool/hlt halt resumed up to " + stamp(failedAt) + " (kmaint.io/resume-halt=" + stamp(failedAt) + `); slots freed, nodes as they are: node hlt-2 (health check "node-ready", value 0, at ` + stamp(failedAt) + ")\n"))
	got := harness.GetPool(g, bed, "hlt")
	g.Expect(got.Annotations).To(HaveKeyWithValue(v1alpha1.ResumeHaltAnnotation, stamp(failedAt)))
	g.Expect(got.Spec.Paused).To(BeFalse())
	rv := got.ResourceVersion
	out, err = run(t, "resume", "hlt")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("maintenancepool/hlt halt already resumed up to " + stamp(failedAt)))
	g.Expect(harness.GetPool(g, bed, "hlt").ResourceVersion).To(Equal(rv), "nothing written the second time")

	// A later failure is not covered by the first resume: resume moves the
	// annotation on to it. Paused as well: one resume lifts both.
	later := failedAt.Add(time.Minute)
	p = harness.GetPool(g, bed, "hlt")
	p.Status.Halt.Nodes = append(p.Status.Halt.Nodes, v1alpha1.HaltedNode{Node: "hlt-1", Check: "node-ready", Value: "0", Time: metav1.NewTime(later)})
	g.Expect(bed.Client.Status().Update(ctx, p)).To(Succeed())
	harness.PatchPool(g, bed, "hlt", func(p *v1alpha1.MaintenancePool) { p.Spec.Paused = true })
	out, err = run(t, "resume", "hlt")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("maintenancepool/hlt resumed: 1 waiting requests may be admitted again\n"))
	g.Expect(out).To(ContainSubstring("halt resumed up to " + stamp(later)))
	g.Expect(out).To(ContainSubstring("node hlt-2 "))
	g.Expect(out).To(ContainSubstring("node hlt-1 "))
	got = harness.GetPool(g, bed, "hlt")
	g.Expect(got.Annotations).To(HaveKeyWithValue(v1alpha1.ResumeHaltAnnotation, stamp(later)))
	g.Expect(got.Spec.Paused).To(BeFalse())

	// A malformed annotation (a person's typo) is written over.
	harness.PatchPool(g, bed, "hlt", func(p *v1alpha1.MaintenancePool) { p.Annotations[v1alpha1.ResumeHaltAnnotation] = "yesterday" })
	_, err = run(t, "resume", "hlt")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(harness.GetPool(g, bed, "hlt").Annotations).To(HaveKeyWithValue(v1alpha1.ResumeHaltAnnotation, stamp(later)))
}

// Health checks that cannot run halt a pool that no person can resume:
// status says it lifts by itself, resume says so and writes nothing.
func TestStatusAndResumeWhileHealthChecksCannotRun(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	harness.CreateTemporary(t, bed, gen.Pool("hcu", intstr.FromInt32(1)))
	p := harness.GetPool(g, bed, "hcu")
	p.Status.ObservedGeneration = p.Generation
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.HaltedCondition, Status: metav1.ConditionTrue,
		Reason: v1alpha1.HealthCheckUnavailableReason, Message: "Prometheus unreachable: connection refused"})
	g.Expect(bed.Client.Status().Update(ctx, p)).To(Succeed())

	out, err := run(t, "status", "--pool", "hcu")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(MatchRegexp(`(?m)^hcu\s+0\s+.*HALTED \(checks cannot run\)$`))
	g.Expect(out).To(MatchRegexp(`Pool hcu is HALTED \(HealthCheckUnavailable\) since \S+ \(\S+ ago\): Prometheus unreachable: connection refused\n  .*lifts by itself`))

	rv := harness.GetPool(g, bed, "hcu").ResourceVersion
	out, err = run(t, "resume", "hcu")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("maintenancepool/hcu is halted (HealthCheckUnavailable: Prometheus unreachable: connection refused): that lifts by itself once its health checks run; resume cannot lift it\n"))
	g.Expect(harness.GetPool(g, bed, "hcu").ResourceVersion).To(Equal(rv))
}

// A frozen pool and a pool waiting for its canaries say so, with the
// freeze's end and the canaries' message.
func TestStatusOfFrozenPoolAndCanaries(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	end := time.Now().UTC().Add(49 * time.Hour).Truncate(time.Second)
	harness.CreateTemporary(t, bed, gen.Pool("frz", intstr.FromInt32(1)))
	p := harness.GetPool(g, bed, "frz")
	p.Status.ObservedGeneration = p.Generation
	p.Status.Freeze = &v1alpha1.ActiveFreeze{Name: "black-friday", Reason: "shopping season", End: metav1.NewTime(end)}
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.FrozenCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.FrozenReason, Message: "freeze black-friday"})
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.BlockedCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.FrozenReason, Message: "freeze black-friday"})
	g.Expect(bed.Client.Status().Update(ctx, p)).To(Succeed())

	harness.CreateTemporary(t, bed, gen.Pool("can", intstr.FromInt32(3)))
	p = harness.GetPool(g, bed, "can")
	p.Status.ObservedGeneration = p.Generation
	p.Status.Settling = 1
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.BlockedCondition, Status: metav1.ConditionTrue,
		Reason: v1alpha1.CanariesReason, Message: "1 of 1 canaries settling: node can-0"})
	g.Expect(bed.Client.Status().Update(ctx, p)).To(Succeed())

	// A freeze the operator cannot read holds its pool all the same.
	harness.CreateTemporary(t, bed, gen.Pool("ifz", intstr.FromInt32(1)))
	p = harness.GetPool(g, bed, "ifz")
	p.Status.ObservedGeneration = p.Generation
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.FrozenCondition, Status: metav1.ConditionTrue,
		Reason: v1alpha1.InvalidFreezeReason, Message: `freeze fridays: unknown time zone "Mars/Olympus"`})
	g.Expect(bed.Client.Status().Update(ctx, p)).To(Succeed())

	out, err := run(t, "status")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(MatchRegexp(`(?m)^ifz\s+0\s+.*\s+Frozen$`))
	g.Expect(out).To(ContainSubstring(`Pool ifz is FROZEN (InvalidFreeze): freeze fridays: unknown time zone "Mars/Olympus"`))
	g.Expect(out).To(MatchRegexp(`(?m)^frz\s+0\s+.*\s+Frozen: black-friday$`))
	g.Expect(out).To(MatchRegexp(`(?m)^can\s+0\s+.*\s+waiting for canaries, 1 settling$`))
	g.Expect(out).To(ContainSubstring("Pool frz is FROZEN by freeze black-friday (shopping season) until " + stamp(end) + " (in 2d"))
	g.Expect(out).To(ContainSubstring("only requests made with --ignore-freezes pass"))
	g.Expect(out).To(ContainSubstring("Pool can waits for its canaries: 1 of 1 canaries settling: node can-0"))
}

// deleteNodes deletes nodes whose annotations an operator of a later test
// would act on.
func deleteNodes(t *testing.T, names ...string) {
	for _, name := range names {
		if err := bed.Client.Delete(context.Background(), gen.Node(name)); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// createNode creates a Ready node of pool in boot b1 that settles after its
// reboot, as the gate leaves it.
func createNode(t *testing.T, name, pool string, s protocol.Settle) {
	t.Helper()
	n := gen.Node(name, gen.Labels("pool", pool), gen.BootID("b1"), gen.Annotations(protocol.Settling, protocol.Encode(s)))
	if err := gen.CreateNode(context.Background(), bed.Client, n); err != nil {
		t.Fatal(err)
	}
}

// createSettling creates the NodeMaintenance of a node that settles, with
// its Healthy condition.
func createSettling(t *testing.T, node string, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	ctx := context.Background()
	nm := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{GenerateName: node + "-"},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: node, Type: v1alpha1.RebootMaintenance, Source: v1alpha1.SourceConfig, Reason: "kernel-6.12.9"},
	}
	harness.CreateTemporary(t, bed, nm)
	now := metav1.Now()
	nm.Status.Phase = v1alpha1.PhaseSettling
	nm.Status.PhaseTimes.Settling = &now
	nm.Status.Conditions = []metav1.Condition{{Type: v1alpha1.HealthyCondition, Status: status, Reason: reason, Message: message, LastTransitionTime: now}}
	if err := bed.Client.Status().Update(ctx, nm); err != nil {
		t.Fatal(err)
	}
}

// A rollout halted by a hook that failed after the reboot: status names
// the node and the hook, counts the node at its hook, and the node's row
// says which hook failed and why; resume says it runs the hook again.
func TestStatusAndResumeOfAPoolHaltedByAHook(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	failedAt := time.Now().UTC().Add(-2 * time.Minute).Truncate(time.Second)
	pool := gen.Pool("hkh", intstr.FromInt32(1))
	pool.Spec.Hooks = &v1alpha1.Hooks{AfterReboot: []v1alpha1.Hook{{Name: "verify", Job: &v1alpha1.HookJob{}}}}
	harness.CreateTemporary(t, bed, pool)
	admitted := failedAt.Add(-5 * time.Minute)
	rec := protocol.HookRecord{Point: protocol.AfterReboot, BootID: "b1", Token: "t", Since: failedAt.Add(-time.Minute), Hooks: []protocol.HookProgress{{
		Name: "verify", Attempt: 1, Since: failedAt.Add(-time.Minute), Deadline: failedAt.Add(time.Hour),
		Failure: &protocol.HookFailure{Reason: "HookJobFailed", Message: "Job kmaint-verify-1 failed: BackoffLimitExceeded", Time: failedAt, OnFailure: "Halt"},
	}}}
	n := gen.Node("hkh-0", gen.Labels("pool", "hkh"), gen.BootID("b1"), gen.Unschedulable(), gen.Admitted("b0", admitted, "r1"), gen.Approved("b0"),
		gen.Annotations(protocol.Hook, protocol.Encode(rec)))
	g.Expect(gen.CreateNode(ctx, bed.Client, n)).To(Succeed())
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), n) })

	p := harness.GetPool(g, bed, "hkh")
	p.Status.ObservedGeneration = p.Generation
	p.Status.Nodes, p.Status.MaxUnavailable, p.Status.Unavailable, p.Status.AtHooks = 1, 1, 1, 1
	p.Status.Halt = &v1alpha1.PoolHalt{Since: metav1.NewTime(failedAt), Resume: v1alpha1.ResumeManual, Nodes: []v1alpha1.HaltedNode{{
		Node: "hkh-0", Check: "verify", Value: "HookJobFailed", Time: metav1.NewTime(failedAt), Message: rec.Describe(),
	}}}
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.HaltedCondition, Status: metav1.ConditionTrue,
		Reason: v1alpha1.HookFailedReason, Message: "node hkh-0: " + rec.Describe(), LastTransitionTime: metav1.NewTime(failedAt)})
	g.Expect(bed.Client.Status().Update(ctx, p)).To(Succeed())

	out, err := run(t, "status", "--pool", "hkh")
	g.Expect(err).NotTo(HaveOccurred())
	t.Log("\n" + out)
	g.Expect(out).To(MatchRegexp(`(?m)^hkh\s.*HALTED: hkh-0 failed verify, 1 at hooks$`))
	g.Expect(out).To(MatchRegexp(`(?m)^hkh-0\s+hkh\s+Rebooting\s+back with boot b1; hook verify \(afterReboot\) failed at attempt 1`))
	g.Expect(out).To(ContainSubstring(`  node hkh-0: hook "verify" failed (HookJobFailed) at ` + stamp(failedAt) + "; a resume runs it again\n"))

	out, err = run(t, "resume", "hkh")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring(`node hkh-0 (hook "verify", HookJobFailed, at ` + stamp(failedAt) + ": it runs again)"))
}

// A node relabelled while it settles is listed under the pool that admitted
// it, which keeps it until its maintenance ends, and says where its labels
// put it now.
func TestStatusListsANodeRelabelledInFlightUnderItsPool(t *testing.T) {
	g := NewWithT(t)
	for _, name := range []string{"keeper", "labelled"} {
		harness.CreateTemporary(t, bed, gen.Pool(name, intstr.FromInt32(1)))
	}
	keeper := harness.GetPool(g, bed, "keeper")
	at := time.Now().UTC().Truncate(time.Second)
	createNode(t, "keeper-0", "labelled", protocol.Settle{BootID: "b1", RebootedBoot: "b0", Pool: "keeper", PoolUID: keeper.UID,
		Since: at, Until: at.Add(10 * time.Minute)})
	t.Cleanup(func() { deleteNodes(t, "keeper-0") })

	out, err := run(t, "status", "--pool", "keeper")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(MatchRegexp(`(?m)^keeper-0\s+keeper \(labels: labelled\)\s+Settling\s`))
	out, err = run(t, "status", "--pool", "labelled")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).NotTo(ContainSubstring("keeper-0"), "the pool its labels name does not have it")
}
