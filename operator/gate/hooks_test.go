package gate_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// hookRecord reads the node's hooks record; nil when it has none.
func hookRecord(g Gomega, node string) *protocol.HookRecord {
	s, err := protocol.Read(getNode(g, node))
	g.Expect(err).NotTo(HaveOccurred())
	return s.Hook
}

// editNode changes the node as a person or another controller would.
func editNode(g Gomega, node string, change func(*corev1.Node)) {
	n := getNode(g, node)
	patch := client.MergeFrom(n.DeepCopy())
	change(n)
	g.Expect(bed.Client.Patch(context.Background(), n, patch)).To(Succeed())
}

// acknowledge writes a hook's acknowledgement on the node, as the hook's
// owner would.
func acknowledge(g Gomega, node, hook, token string) {
	editNode(g, node, func(n *corev1.Node) { n.Annotations[protocol.AckPrefix+hook] = token })
}

// startOperatorWithHooks starts the operator with a hooks namespace of the
// test's own, and returns it.
func startOperatorWithHooks(t *testing.T, ns string) string {
	t.Helper()
	harness.Create(t, bed, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	harness.StartOperatorWith(t, bed, operator.Options{HooksNamespace: ns})
	return ns
}

func jobHook(name string) v1alpha1.Hook {
	return v1alpha1.Hook{Name: name, Job: &v1alpha1.HookJob{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "work", Image: "registry.example/hook:1", Command: []string{"/bin/work"}}},
	}}}}
}

// heldJob is a one-node pool of the name whose beforeReboot hook is a Job
// that runs, in a hooks namespace of its own, until the test ends it; with
// the node's simulated daemon. The operator is the test's to start.
type heldJob struct {
	node, ns string
	jobs     *harness.Jobs
	daemons  *harness.Daemons
}

func newHeldJob(t *testing.T, name string, change ...func(*v1alpha1.MaintenancePool)) heldJob {
	t.Helper()
	pool := gen.Pool(name, intstr.FromInt32(1))
	pool.Spec.Hooks = &v1alpha1.Hooks{BeforeReboot: []v1alpha1.Hook{jobHook("upgrade")}}
	for _, c := range change {
		c(pool)
	}
	createPool(t, pool)
	h := heldJob{node: createNodes(t, name, name, 1)[0], ns: "hooks-" + name}
	h.daemons = runDaemons(t, name, false)
	harness.Create(t, bed, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}})
	h.jobs = harness.RunJobs(t, bed, h.ns, func(*batchv1.Job) harness.JobOutcome { return harness.JobOutcome{Hold: true} })
	return h
}

// started asks for the node's reboot and waits until its Job is made.
func (h heldJob) started(t *testing.T, g Gomega) {
	t.Helper()
	request(t, h.node, "r", time.Now())
	g.Eventually(func(g Gomega) { g.Expect(h.jobs.Made()).To(HaveLen(1)) }, timeout).Should(Succeed())
}

// finish ends the Job well: the node reboots once, and no other Job was
// ever made.
func (h heldJob) finish(g Gomega) {
	g.Expect(harness.FinishJob(context.Background(), bed.Client, h.jobs.Made()[0], harness.JobOutcome{})).To(Succeed())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, h.node, false) }, timeout).Should(Succeed())
	g.Expect(h.jobs.Made()).To(HaveLen(1))
	g.Expect(h.daemons.Count(h.node)).To(Equal(1))
}

// A gate another controller opens keeps the drain from starting until it
// acknowledges the token of this admission; an acknowledgement written for
// another boot does not open it, nor does the one that opened the last
// reboot open the next.
func TestAcknowledgementsOpenOnlyTheirOwnAdmission(t *testing.T) {
	g := NewWithT(t)
	pool := gen.Pool("ackgate", intstr.FromInt32(1))
	pool.Spec.Hooks = &v1alpha1.Hooks{BeforeDrain: []v1alpha1.Hook{{Name: "db-stepdown", Acknowledgement: &v1alpha1.HookAcknowledgement{}}}}
	createPool(t, pool)
	node := createNodes(t, "ackgate", "ackgate", 1)[0]
	budget := watchBudget(t, "ackgate")
	daemons := runDaemons(t, "ackgate", false)
	startOperator(t)

	waiting := func(g Gomega, other string) string {
		rec := hookRecord(g, node)
		g.Expect(rec).NotTo(BeNil())
		g.Expect(rec.Point).To(Equal(protocol.BeforeDrain))
		g.Expect(rec.Token).NotTo(Equal(other))
		g.Expect(rec.Waiting()).To(Equal([]string{"db-stepdown"}))
		n := getNode(g, node)
		g.Expect(n.Spec.Unschedulable).To(BeTrue(), "admitted and cordoned while it waits")
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.RebootApproved))
		return rec.Token
	}
	request(t, node, "first", time.Now())
	var token string
	g.Eventually(func(g Gomega) { token = waiting(g, "") }, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		p := getPool(g, "ackgate")
		g.Expect(p.Status.AtHooks).To(BeEquivalentTo(1), "the pool counts its node at a hook")
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.DrainingCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring("waiting for hook db-stepdown (beforeDrain)"))
	}, timeout).Should(Succeed())

	// Its request says what it waits for.
	g.Eventually(func(g Gomega) {
		g.Expect(harness.MaintenancesOf(g, bed, node)).To(ContainElement(WithTransform(func(nm v1alpha1.NodeMaintenance) string { return nm.Status.Message },
			ContainSubstring("waiting for hook db-stepdown (beforeDrain)"))))
	}, timeout).Should(Succeed())

	acknowledge(g, node, "db-stepdown", protocol.HookToken(node, "ackgate", "boot-earlier", time.Now(), protocol.BeforeDrain))
	g.Consistently(func(g Gomega) { waiting(g, "") }, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	acknowledge(g, node, "db-stepdown", token)
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, node, false) }, timeout).Should(Succeed())
	g.Expect(hookRecord(g, node)).To(BeNil(), "the record goes with the completed reboot")
	g.Eventually(func(g Gomega) { g.Expect(getPool(g, "ackgate").Status.AtHooks).To(BeZero()) }, timeout).Should(Succeed())

	g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.AckPrefix+"db-stepdown"), "the acknowledgement goes with its admission")

	// The next reboot's gate: the acknowledgement that opened the last one,
	// written again (a controller that replays what it did), opens nothing.
	request(t, node, "second", time.Now())
	var second string
	g.Eventually(func(g Gomega) { second = waiting(g, token) }, timeout).Should(Succeed())
	acknowledge(g, node, "db-stepdown", token)
	g.Consistently(func(g Gomega) { waiting(g, token) }, 3*time.Second, 200*time.Millisecond).Should(Succeed())
	acknowledge(g, node, "db-stepdown", second)
	g.Eventually(func(g Gomega) { g.Expect(daemons.Count(node)).To(Equal(2)) }, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) { expectSettled(g, node, false) }, timeout).Should(Succeed())
	most, _ := budget.MostUnavailable()
	g.Expect(most).To(Equal(1))
}

// What a hook's Job saw of its node when it was made.
type jobSighting struct {
	point    string
	boot     string
	approved bool
	cordoned bool
}

// A beforeReboot Job runs on the drained node before its approval, an
// afterReboot Job on the node back in its new boot before it is
// completed; each once, pinned to the node, with what it is for in its
// environment.
func TestJobHooksRunAroundTheReboot(t *testing.T) {
	g := NewWithT(t)
	pool := gen.Pool("jobhooks", intstr.FromInt32(1))
	pool.Spec.DesiredConfig = "kernel-2"
	pool.Spec.Hooks = &v1alpha1.Hooks{BeforeReboot: []v1alpha1.Hook{jobHook("stage")}, AfterReboot: []v1alpha1.Hook{jobHook("check")}}
	createPool(t, pool)
	node := createNodes(t, "jobhooks", "jobhooks", 1)[0]
	daemons := runDaemons(t, "jobhooks", false)
	ns := startOperatorWithHooks(t, "hooks-jobhooks")
	var mu sync.Mutex
	var seen []jobSighting
	jobs := harness.RunJobs(t, bed, ns, func(j *batchv1.Job) harness.JobOutcome {
		n := &corev1.Node{}
		if err := bed.Client.Get(context.Background(), client.ObjectKey{Name: node}, n); err != nil {
			t.Errorf("get node: %v", err)
		}
		_, approved := n.Annotations[protocol.RebootApproved]
		mu.Lock()
		seen = append(seen, jobSighting{harness.JobEnv(j, "KMAINT_POINT"), protocol.BootID(n), approved, n.Spec.Unschedulable})
		mu.Unlock()
		return harness.JobOutcome{}
	})

	request(t, node, "kernel", time.Now())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, node, false) }, timeout).Should(Succeed())
	g.Expect(daemons.Count(node)).To(Equal(1))
	made := jobs.Made()
	g.Expect(made).To(HaveLen(2), "one Job per hook")
	mu.Lock()
	g.Expect(seen).To(Equal([]jobSighting{
		{point: "beforeReboot", boot: "boot-0", approved: false, cordoned: true},
		{point: "afterReboot", boot: "boot-0-r1", approved: true, cordoned: true},
	}))
	mu.Unlock()
	for i, want := range []struct{ hook, boot string }{{"stage", "boot-0"}, {"check", "boot-0-r1"}} {
		j := made[i]
		g.Expect(harness.JobEnv(j, "KMAINT_HOOK")).To(Equal(want.hook))
		g.Expect(harness.JobEnv(j, "KMAINT_NODE")).To(Equal(node))
		g.Expect(harness.JobEnv(j, "KMAINT_BOOT_ID")).To(Equal(want.boot))
		g.Expect(harness.JobEnv(j, "KMAINT_DESIRED_CONFIG")).To(Equal("kernel-2"))
		g.Expect(harness.JobEnv(j, "KMAINT_REQUEST_SOURCES")).To(Equal("host"), "%v", j.Spec.Template.Spec.Containers[0].Env)
		g.Expect(harness.JobEnv(j, "KMAINT_ATTEMPT")).To(Equal("1"))
		spec := j.Spec.Template.Spec
		g.Expect(spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
		g.Expect(spec.Tolerations).To(ContainElement(corev1.Toleration{Operator: corev1.TolerationOpExists}))
		g.Expect(spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values).To(Equal([]string{node}))
		g.Expect(*j.Spec.BackoffLimit).To(BeEquivalentTo(0))
		g.Expect(j.Spec.ActiveDeadlineSeconds).NotTo(BeNil())
	}
	g.Eventually(func(g Gomega) {
		g.Expect(harness.EventReasons(g, bed, "Node", node, "Normal")).To(ContainElements("HookStarted", "HookPassed"))
	}, timeout).Should(Succeed())
}

// A hook's failure does what its onFailure says: a Job that cannot be made
// halts the pool with the node in its slot until a resume runs it again;
// Release lets the node go and fails its request; Retry runs it again; a
// failed check after the reboot halts the pool with the node cordoned.
func TestHookFailures(t *testing.T) {
	ns := startOperatorWithHooks(t, "hooks-failures")
	var mu sync.Mutex
	fail := map[string]bool{} // hook/attempt that fails
	jobs := harness.RunJobs(t, bed, ns, func(j *batchv1.Job) harness.JobOutcome {
		mu.Lock()
		defer mu.Unlock()
		if fail[harness.JobEnv(j, "KMAINT_HOOK")+"/"+harness.JobEnv(j, "KMAINT_ATTEMPT")] {
			return harness.JobOutcome{Fail: true, Message: "exit 1"}
		}
		return harness.JobOutcome{}
	})
	made := func(hook string) int {
		return len(slices.DeleteFunc(jobs.Made(), func(j *batchv1.Job) bool { return harness.JobEnv(j, "KMAINT_HOOK") != hook }))
	}
	// failingFirst makes a one-node pool of the name with hooks, whose
	// every hook fails its first attempt.
	failingFirst := func(t *testing.T, name string, hooks v1alpha1.Hooks) (string, *harness.Daemons) {
		mu.Lock()
		for _, h := range append(append(hooks.BeforeDrain, hooks.BeforeReboot...), hooks.AfterReboot...) {
			fail[h.Name+"/1"] = true
		}
		mu.Unlock()
		pool := gen.Pool(name, intstr.FromInt32(1))
		pool.Spec.Hooks = &hooks
		createPool(t, pool)
		return createNodes(t, name, name, 1)[0], runDaemons(t, name, false)
	}
	halted := func(g Gomega, pool string) *metav1.Condition {
		c := meta.FindStatusCondition(getPool(g, pool).Status.Conditions, v1alpha1.HaltedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		return c
	}

	t.Run("a Job that cannot be made halts until resumed", func(t *testing.T) {
		g := NewWithT(t)
		bad := jobHook("unmakeable")
		bad.Job.Template.Spec.Containers = nil // the API server refuses a pod without containers
		pool := gen.Pool("hookhalt", intstr.FromInt32(2))
		pool.Spec.Hooks = &v1alpha1.Hooks{BeforeReboot: []v1alpha1.Hook{bad}}
		createPool(t, pool)
		nodes := createNodes(t, "hookhalt", "hookhalt", 2)
		runDaemons(t, "hookhalt", false)
		request(t, nodes[0], "a", time.Now())
		g.Eventually(func(g Gomega) {
			c := halted(g, "hookhalt")
			g.Expect(c.Reason).To(Equal(v1alpha1.HookFailedReason))
			g.Expect(c.Message).To(ContainSubstring("unmakeable"))
			rec := hookRecord(g, nodes[0])
			g.Expect(rec.Failed()).NotTo(BeNil())
			g.Expect(rec.Failed().Failure.Reason).To(Equal("HookJobNotStarted"))
			n := getNode(g, nodes[0])
			g.Expect(n.Spec.Unschedulable).To(BeTrue(), "it keeps its slot, cordoned")
			g.Expect(n.Annotations).To(HaveKey(protocol.Admitted))
			g.Expect(n.Annotations).NotTo(HaveKey(protocol.RebootApproved))
		}, timeout).Should(Succeed())
		// The halt holds the next node, though the budget has room.
		request(t, nodes[1], "b", time.Now())
		g.Consistently(func(g Gomega) {
			g.Expect(getNode(g, nodes[1]).Annotations).NotTo(HaveKey(protocol.Admitted))
		}, 2*time.Second, 200*time.Millisecond).Should(Succeed())

		// A person mends the template and resumes: the hook runs again.
		harness.PatchPool(g, bed, "hookhalt", func(p *v1alpha1.MaintenancePool) {
			p.Spec.Hooks.BeforeReboot[0] = jobHook("unmakeable")
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[v1alpha1.ResumeHaltAnnotation] = time.Now().Add(time.Second).UTC().Format(time.RFC3339)
		})
		for _, n := range nodes {
			g.Eventually(func(g Gomega) { expectRebootedOnce(g, n, false) }, timeout).Should(Succeed())
		}
		g.Expect(made("unmakeable")).To(Equal(2), "one Job each node, the refused one never made")
	})

	t.Run("Release lets the node go and fails its request", func(t *testing.T) {
		g := NewWithT(t)
		h := jobHook("release-me")
		h.OnFailure = v1alpha1.HookRelease
		node, daemons := failingFirst(t, "hookrelease", v1alpha1.Hooks{BeforeDrain: []v1alpha1.Hook{h}})
		request(t, node, "r", time.Now())
		g.Eventually(func(g Gomega) {
			n := getNode(g, node)
			s, _ := protocol.Read(n)
			g.Expect(s.DrainFailure).NotTo(BeNil())
			g.Expect(s.DrainFailure.Reason).To(Equal(v1alpha1.HookFailedReason))
			g.Expect(s.DrainFailure.Message).To(ContainSubstring("release-me"))
			g.Expect(n.Spec.Unschedulable).To(BeFalse())
			g.Expect(n.Annotations).NotTo(HaveKey(protocol.Admitted))
			g.Expect(n.Annotations).NotTo(HaveKey(protocol.Hook))
		}, timeout).Should(Succeed())
		g.Consistently(func(g Gomega) {
			g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.Admitted), "the failed request is not admitted again")
		}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
		g.Expect(daemons.Count(node)).To(Equal(0))
		g.Expect(meta.IsStatusConditionTrue(getPool(g, "hookrelease").Status.Conditions, v1alpha1.HaltedCondition)).To(BeFalse())
	})

	t.Run("Retry runs the hook again", func(t *testing.T) {
		g := NewWithT(t)
		h := jobHook("retry-me")
		h.OnFailure = v1alpha1.HookRetry
		node, daemons := failingFirst(t, "hookretry", v1alpha1.Hooks{BeforeReboot: []v1alpha1.Hook{h}})
		request(t, node, "r", time.Now())
		g.Eventually(func(g Gomega) { expectRebootedOnce(g, node, false) }, timeout).Should(Succeed())
		g.Expect(daemons.Count(node)).To(Equal(1))
		g.Expect(made("retry-me")).To(Equal(2))
	})

	t.Run("a failed check after the reboot halts with the node cordoned", func(t *testing.T) {
		g := NewWithT(t)
		mu.Lock()
		fail["verify/1"] = true
		mu.Unlock()
		pool := gen.Pool("hookcheck", intstr.FromInt32(2))
		pool.Spec.Hooks = &v1alpha1.Hooks{AfterReboot: []v1alpha1.Hook{jobHook("verify")}}
		createPool(t, pool)
		nodes := createNodes(t, "hookcheck", "hookcheck", 2)
		budget := watchBudget(t, "hookcheck")
		daemons := runDaemons(t, "hookcheck", false)
		request(t, nodes[0], "a", time.Now())
		g.Eventually(func(g Gomega) {
			halted(g, "hookcheck")
			n := getNode(g, nodes[0])
			g.Expect(protocol.BootID(n)).To(Equal("boot-0-r1"))
			g.Expect(n.Spec.Unschedulable).To(BeTrue())
			g.Expect(hookRecord(g, nodes[0]).Failed().Failure.Reason).To(Equal("HookJobFailed"))
			p := getPool(g, "hookcheck")
			g.Expect(p.Status.Halt).NotTo(BeNil())
			g.Expect(p.Status.Halt.Nodes).To(HaveLen(1))
			g.Expect(p.Status.Halt.Nodes[0].Check).To(Equal("verify"))
			// Its request is not done: it says the check failed.
			g.Expect(harness.MaintenancesOf(g, bed, nodes[0])).To(ContainElement(And(
				WithTransform(func(nm v1alpha1.NodeMaintenance) v1alpha1.Phase { return nm.Status.Phase }, Equal(v1alpha1.PhaseRebooting)),
				WithTransform(func(nm v1alpha1.NodeMaintenance) string { return nm.Status.Message }, ContainSubstring("hook verify (afterReboot) failed")))))
		}, timeout).Should(Succeed())
		request(t, nodes[1], "b", time.Now())
		g.Consistently(func(g Gomega) {
			g.Expect(getNode(g, nodes[1]).Annotations).NotTo(HaveKey(protocol.Admitted))
		}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
		g.Expect(daemons.Count(nodes[0])).To(Equal(1))
		most, _ := budget.MostUnavailable()
		g.Expect(most).To(Equal(1))
	})
}

// An operator killed while a hook's Job runs leaves the Job to the next
// one, which neither makes it again nor goes on without it.
func TestARestartedOperatorMakesTheHookJobOnce(t *testing.T) {
	g := NewWithT(t)
	h := newHeldJob(t, "hookrestart")
	node, jobs, ns := h.node, h.jobs, h.ns
	stop := harness.StartOperatorWith(t, bed, operator.Options{HooksNamespace: ns})

	request(t, node, "r", time.Now())
	g.Eventually(func(g Gomega) {
		g.Expect(jobs.Made()).To(HaveLen(1))
		g.Expect(hookRecord(g, node).Hooks[0].JobStarted.IsZero()).To(BeFalse())
	}, timeout).Should(Succeed())
	stop()
	harness.StartOperatorWith(t, bed, operator.Options{HooksNamespace: ns})
	g.Consistently(func(g Gomega) {
		g.Expect(jobs.Made()).To(HaveLen(1))
		g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.RebootApproved), "approved before its hook passed")
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
	h.finish(g)
}

// A request withdrawn while its node waits at a hook releases the node,
// and the Job that still runs for it is deleted: its work is for a reboot
// that is not coming.
func TestAWithdrawnRequestStopsItsHookJob(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h := newHeldJob(t, "hookwithdrawn")
	node, jobs := h.node, h.jobs
	harness.StartOperatorWith(t, bed, operator.Options{HooksNamespace: h.ns})

	h.started(t, g)
	editNode(g, node, func(n *corev1.Node) { delete(n.Annotations, protocol.RebootRequested) })
	g.Eventually(func(g Gomega) { expectReleasedWithoutItsJob(ctx, g, node, jobs.Made()[0]) }, timeout).Should(Succeed())
}

// expectReleasedWithoutItsJob expects the node released (neither admitted
// nor at a hook, schedulable) and its hook's Job deleted.
func expectReleasedWithoutItsJob(ctx context.Context, g Gomega, node string, job *batchv1.Job) {
	n := getNode(g, node)
	g.Expect(n.Annotations).NotTo(HaveKey(protocol.Admitted))
	g.Expect(n.Annotations).NotTo(HaveKey(protocol.Hook))
	g.Expect(n.Spec.Unschedulable).To(BeFalse())
	err := bed.Client.Get(ctx, client.ObjectKeyFromObject(job), &batchv1.Job{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Job is deleted: %v", err)
}

// A request withdrawn in the moment between its hook's Job being made and
// the record of it being written (the write then fails: the node changed)
// still stops the Job: the record shows the attempt begun, and the Job's
// name is the attempt's.
func TestAWithdrawnRequestStopsAHookJobItsRecordDoesNotShow(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h := newHeldJob(t, "hookunrecorded")
	node, jobs := h.node, h.jobs
	harness.StartOperatorWith(t, bed, operator.Options{HooksNamespace: h.ns})

	h.started(t, g)
	g.Eventually(func(g Gomega) { g.Expect(hookRecord(g, node).Hooks[0].JobStarted.IsZero()).To(BeFalse()) }, timeout).Should(Succeed())
	editNode(g, node, func(n *corev1.Node) {
		forgetJobMade(g, n)
		delete(n.Annotations, protocol.RebootRequested)
	})
	g.Eventually(func(g Gomega) { expectReleasedWithoutItsJob(ctx, g, node, jobs.Made()[0]) }, timeout).Should(Succeed())
}

// A person who uncordons a node while it waits at its beforeReboot hooks
// gets the cordon back, and the node drains again before it meets them
// again: pods may have landed on it. Its Job, the same one, is not made a
// second time.
func TestUncordonedAtItsHookTheNodeDrainsAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h := newHeldJob(t, "hookuncordon")
	node := h.node
	harness.StartOperatorWith(t, bed, operator.Options{HooksNamespace: h.ns})

	h.started(t, g)
	editNode(g, node, func(n *corev1.Node) { n.Spec.Unschedulable = false })
	// A pod lands on it meanwhile: the drain that follows evicts it before
	// the node is approved.
	pod := gen.Pod("default", "landed-"+node, node, map[string]string{"app": "landed"})
	g.Expect(gen.CreatePod(ctx, bed.Client, pod)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getNode(g, node).Spec.Unschedulable).To(BeTrue(), "cordoned again")
		err := bed.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the pod that landed is evicted: %v", err)
		rec := hookRecord(g, node)
		g.Expect(rec).NotTo(BeNil())
		g.Expect(rec.Point).To(Equal(protocol.BeforeReboot))
		g.Expect(rec.Hooks[0].JobStarted.IsZero()).To(BeFalse(), "back at its hook, its Job found")
	}, timeout).Should(Succeed())
	g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.RebootApproved))
	h.finish(g)
}

// A node that still asks for a config its pool no longer wants is not
// admitted for it: its daemon is about to withdraw it (a roll back) or ask
// for the new one; admitted meanwhile, it would reboot for nothing.
func TestAStaleConfigRequestIsNotAdmitted(t *testing.T) {
	g := NewWithT(t)
	pool := gen.Pool("staleconfig", intstr.FromInt32(1))
	pool.Spec.DesiredConfig = "v1"
	createPool(t, pool)
	stale := protocol.Request{ID: v1alpha1.ConfigRequestID("boot-0", "v2"), Source: v1alpha1.SourceConfig, Reason: "config v1, pool wants v2", Time: time.Now(), Config: "v2"}
	node := createNodes(t, "staleconfig", "staleconfig", 1, gen.Requested("boot-0", stale))[0]
	runDaemons(t, "staleconfig", false)
	startOperator(t)
	g.Eventually(func(g Gomega) {
		g.Expect(getPool(g, "staleconfig").Status.ObservedGeneration).NotTo(BeZero())
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		n := getNode(g, node)
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.Admitted), "%v", n.Annotations)
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	// The pool wants v2 again: the request stands, and is admitted.
	harness.PatchPool(g, bed, "staleconfig", func(p *v1alpha1.MaintenancePool) { p.Spec.DesiredConfig = "v2" })
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, node, false) }, timeout).Should(Succeed())
}

// A hook's Job deleted and made again by someone else, however it ends,
// passes nothing: its hook fails, and the node is not approved.
func TestAReplacedHookJobPassesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h := newHeldJob(t, "hookreplaced")
	node, jobs := h.node, h.jobs
	harness.StartOperatorWith(t, bed, operator.Options{HooksNamespace: h.ns})

	request(t, node, "r", time.Now())
	g.Eventually(func(g Gomega) {
		g.Expect(jobs.Made()).To(HaveLen(1))
		g.Expect(hookRecord(g, node).Hooks[0].JobUID).NotTo(BeEmpty())
	}, timeout).Should(Succeed())
	ours := jobs.Made()[0]
	g.Expect(bed.Client.Delete(ctx, ours, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	forged := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: ours.Name, Namespace: ours.Namespace, Labels: ours.Labels, Annotations: ours.Annotations}, Spec: ours.Spec}
	forged.Spec.Selector, forged.Spec.ManualSelector = nil, nil
	delete(forged.Spec.Template.Labels, "batch.kubernetes.io/controller-uid")
	delete(forged.Spec.Template.Labels, "controller-uid")
	g.Eventually(func() error { return bed.Client.Create(ctx, forged) }, timeout).Should(Succeed())
	g.Expect(harness.FinishJob(ctx, bed.Client, forged, harness.JobOutcome{})).To(Succeed())
	g.Eventually(func(g Gomega) {
		f := hookRecord(g, node).Failed()
		g.Expect(f).NotTo(BeNil())
		g.Expect(f.Failure.Reason).To(Equal("HookJobLost"))
	}, timeout).Should(Succeed())
	g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.RebootApproved))
}

// forgetJobMade takes the Job of the node's first hook out of its record, as
// an operator that died between making the Job and recording it leaves it.
func forgetJobMade(g Gomega, n *corev1.Node) {
	var rec protocol.HookRecord
	_, err := protocol.Decode(n, protocol.Hook, &rec)
	g.Expect(err).NotTo(HaveOccurred())
	rec.Hooks[0].JobStarted, rec.Hooks[0].JobUID = time.Time{}, ""
	n.Annotations[protocol.Hook] = protocol.Encode(rec)
}
