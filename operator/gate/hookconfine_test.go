package gate_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/operator/hooks"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/sim"
)

// storePoolUnchecked stores the pool as one stored before the API refused
// what it holds.
func storePoolUnchecked(t *testing.T, pool *v1alpha1.MaintenancePool) {
	t.Helper()
	raw, err := json.Marshal(pool)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("MaintenancePool"))
	if err := bed.StoreUnchecked(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), u) })
}

// Every hook's pod runs under the service account and in the priority class
// the install names, whatever its pool's template says: here a pool stored
// before the API refused a template that names a service account, and
// whose template chose its own priority.
func TestHookPodsRunAsTheInstallSays(t *testing.T) {
	g := NewWithT(t)
	hook := jobHook("upgrade")
	spec := &hook.Job.Template.Spec
	spec.ServiceAccountName, spec.DeprecatedServiceAccount = "cluster-admin", "cluster-admin"
	spec.PriorityClassName, spec.Priority, spec.PreemptionPolicy = "tenant-high", ptr.To[int32](7), ptr.To(corev1.PreemptNever)
	pool := gen.Pool("hookinstall", intstr.FromInt32(1))
	pool.Spec.Hooks = &v1alpha1.Hooks{BeforeReboot: []v1alpha1.Hook{hook}}
	storePoolUnchecked(t, pool)
	node := createNodes(t, "hookinstall", "hookinstall", 1)[0]
	runDaemons(t, "hookinstall", false)
	ns := "hooks-hookinstall"
	harness.Create(t, bed, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	jobs := harness.RunJobs(t, bed, ns, func(*batchv1.Job) harness.JobOutcome { return harness.JobOutcome{} })
	harness.StartOperatorWith(t, bed, operator.Options{HooksNamespace: ns, HooksServiceAccount: "kmaint-hook", HooksPriorityClass: "kmaint-hook"})

	request(t, node, "r", time.Now())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, node, false) }, timeout).Should(Succeed())
	g.Expect(jobs.Made()).To(HaveLen(1))
	got := jobs.Made()[0].Spec.Template.Spec
	g.Expect(got.ServiceAccountName).To(Equal("kmaint-hook"))
	g.Expect(got.DeprecatedServiceAccount).To(Or(BeEmpty(), Equal("kmaint-hook")))
	g.Expect(got.PriorityClassName).To(Equal("kmaint-hook"))
	g.Expect(got.Priority).To(BeNil(), "the class gives the priority; a pod that states another is refused")
	g.Expect(got.PreemptionPolicy).To(BeNil(), "the class gives the preemption policy")
}

// A Job made first under the name of a hook's Job (the name is computed
// from what any reader of Nodes sees), running anything and done, passes
// nothing: the gate finds it is not the one it makes, fails the hook with
// HookJobNotOurs, says so, and leaves the Job for a person. The node is
// never approved.
func TestAPreMadeHookJobPassesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	upgrade := jobHook("upgrade")
	pool := gen.Pool("hookpremade", intstr.FromInt32(1))
	pool.Spec.Hooks = &v1alpha1.Hooks{
		BeforeDrain:  []v1alpha1.Hook{{Name: "db-stepdown", Acknowledgement: &v1alpha1.HookAcknowledgement{}}},
		BeforeReboot: []v1alpha1.Hook{upgrade},
	}
	createPool(t, pool)
	node := createNodes(t, "hookpremade", "hookpremade", 1)[0]
	daemons := runDaemons(t, "hookpremade", false)
	ns := startOperatorWithHooks(t, "hooks-hookpremade")
	jobs := harness.RunJobs(t, bed, ns, func(*batchv1.Job) harness.JobOutcome { return harness.JobOutcome{} })

	// While the node waits at its beforeDrain acknowledgement, its
	// admission, and so its beforeReboot token, is on the Node.
	request(t, node, "r", time.Now())
	var drainToken string
	var admission *protocol.Admission
	g.Eventually(func(g Gomega) {
		rec := hookRecord(g, node)
		g.Expect(rec).NotTo(BeNil())
		g.Expect(rec.Point).To(Equal(protocol.BeforeDrain))
		s, err := protocol.Read(getNode(g, node))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(s.Admission).NotTo(BeNil())
		drainToken, admission = rec.Token, s.Admission
	}, timeout).Should(Succeed())
	token := protocol.HookToken(node, admission.Pool, admission.BootID, admission.Time, protocol.BeforeReboot)
	// The forgery is as close as it gets: the gate's own labels and
	// annotations, the pool's template, running `true`.
	forged := upgrade
	forged.Job = forged.Job.DeepCopy()
	forged.Job.Template.Spec.Containers[0].Command = []string{"true"}
	premade := hooks.NewJob(&forged, hooks.JobContext{Namespace: ns, Pool: "hookpremade", Node: node, Point: protocol.BeforeReboot,
		BootID: admission.BootID, Token: token, Attempt: 1, Deadline: time.Now().Add(10 * time.Minute), Now: time.Now()})
	g.Expect(bed.Client.Create(ctx, premade)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &batchv1.Job{}
		g.Expect(bed.Client.Get(ctx, client.ObjectKeyFromObject(premade), got)).To(Succeed())
		g.Expect(hooks.PhaseOf(got).State).To(Equal(hooks.AttemptPassed), "the forged Job is done")
	}, timeout).Should(Succeed())

	acknowledge(g, node, "db-stepdown", drainToken)
	g.Eventually(func(g Gomega) {
		rec := hookRecord(g, node)
		g.Expect(rec).NotTo(BeNil(), "the node still waits at a hook")
		g.Expect(rec.Point).To(Equal(protocol.BeforeReboot))
		f := rec.Failed()
		g.Expect(f).NotTo(BeNil())
		g.Expect(f.Failure.Reason).To(Equal(hooks.ReasonJobNotOurs))
		g.Expect(f.Failure.Message).To(ContainSubstring("Job " + ns + "/" + premade.Name + " existed before kmaint made it"))
		g.Expect(f.Failure.Message).To(ContainSubstring("its pod template differs"))
		g.Expect(meta.IsStatusConditionTrue(getPool(g, "hookpremade").Status.Conditions, v1alpha1.HaltedCondition)).To(BeTrue())
		var events eventsv1.EventList
		g.Expect(bed.Client.List(ctx, &events)).To(Succeed())
		g.Expect(events.Items).To(ContainElement(And(
			HaveField("Regarding.Name", node), HaveField("Reason", "HookFailed"), HaveField("Type", corev1.EventTypeWarning),
			HaveField("Note", ContainSubstring("HookJobNotOurs: Job "+ns+"/"+premade.Name)))))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.RebootApproved))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(daemons.Count(node)).To(BeZero())
	g.Expect(bed.Client.Get(ctx, client.ObjectKeyFromObject(premade), &batchv1.Job{})).To(Succeed(), "left for a person to look at")
	g.Expect(jobs.Made()).To(HaveLen(1), "the gate made none")
}

// The gate's own Job, made while the record of it was not written (the
// operator died, or the node changed, between the two), is found again and
// taken as made: the same Job, whose end passes the hook.
func TestAnUnrecordedHookJobIsTheGates(t *testing.T) {
	g := NewWithT(t)
	h := newHeldJob(t, "hookunwritten")
	node, jobs := h.node, h.jobs
	harness.StartOperatorWith(t, bed, operator.Options{HooksNamespace: h.ns, HooksServiceAccount: "kmaint-hook", HooksPriorityClass: "kmaint-hook"})

	h.started(t, g)
	g.Eventually(func(g Gomega) { g.Expect(hookRecord(g, node).Hooks[0].JobStarted.IsZero()).To(BeFalse()) }, timeout).Should(Succeed())
	editNode(g, node, func(n *corev1.Node) {
		forgetJobMade(g, n)
	})
	g.Eventually(func(g Gomega) {
		p := hookRecord(g, node).Hooks[0]
		g.Expect(p.Failure).To(BeNil())
		g.Expect(p.JobUID).To(Equal(string(jobs.Made()[0].UID)), "the Job found again is recorded")
	}, timeout).Should(Succeed())
	h.finish(g)
}

// The operator refuses to start with a hooks namespace that holds other
// workloads (a pod that is not of kmaint's hook Jobs, a Job that is not
// kmaint's), or that is its own; one that holds kmaint's hook Jobs and
// their pods, as when it restarts while hooks run, is its to use.
func TestTheOperatorRefusesAHooksNamespaceWithOtherWorkloads(t *testing.T) {
	ctx := context.Background()
	hookLabels := map[string]string{hooks.ManagedByLabel: "kmaint", hooks.HookLabel: "upgrade", hooks.TokenLabel: "0123456789abcdef"}
	container := []corev1.Container{{Name: "work", Image: "registry.example/hook:1"}}
	job := func(ns, name string, labels map[string]string) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: container}}}}
	}
	pod := func(ns, name string, labels map[string]string, owner *batchv1.Job) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Spec: corev1.PodSpec{Containers: container}}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}
		}
		return p
	}
	namespace := func(t *testing.T, name string, objs ...func(ns string) client.Object) string {
		harness.Create(t, bed, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		for _, o := range objs {
			harness.Create(t, bed, o(name))
		}
		return name
	}
	start := func(cfg *rest.Config, ns string) error {
		op, err := sim.StartOperator(ctx, cfg, operator.Options{HooksNamespace: ns})
		if err == nil {
			err = op.Stop()
		}
		return err
	}

	t.Run("empty", func(t *testing.T) {
		NewWithT(t).Expect(start(bed.Config, namespace(t, "hooksns-empty"))).To(Succeed())
	})
	t.Run("kmaint's hook Jobs and their pods", func(t *testing.T) {
		g := NewWithT(t)
		ns := namespace(t, "hooksns-ours")
		j := job(ns, "kmaint-upgrade-0123456789", hookLabels)
		harness.Create(t, bed, j)
		harness.Create(t, bed, pod(ns, "kmaint-upgrade-0123456789-x7k2p", hookLabels, j))
		// One whose Job was deleted a moment ago.
		harness.Create(t, bed, pod(ns, "kmaint-upgrade-9876543210-b5m4q", hookLabels, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "kmaint-upgrade-9876543210", UID: "gone"}}))
		g.Expect(start(bed.Config, ns)).To(Succeed())
	})
	t.Run("another pod", func(t *testing.T) {
		ns := namespace(t, "hooksns-pod", func(ns string) client.Object { return pod(ns, "ci-runner", map[string]string{"app": "ci"}, nil) })
		NewWithT(t).Expect(start(bed.Config, ns)).To(MatchError(ContainSubstring(
			"--hooks-namespace=hooksns-pod holds other workloads: pod ci-runner is not a pod of kmaint's hook Jobs")))
	})
	t.Run("a pod that looks like a hook's but has no Job", func(t *testing.T) {
		ns := namespace(t, "hooksns-bare", func(ns string) client.Object { return pod(ns, "kmaint-upgrade-0123456789-x", hookLabels, nil) })
		NewWithT(t).Expect(start(bed.Config, ns)).To(MatchError(ContainSubstring("pod kmaint-upgrade-0123456789-x is not a pod of kmaint's hook Jobs")))
	})
	t.Run("another Job", func(t *testing.T) {
		ns := namespace(t, "hooksns-job", func(ns string) client.Object { return job(ns, "nightly-backup", map[string]string{"app": "backup"}) })
		NewWithT(t).Expect(start(bed.Config, ns)).To(MatchError(ContainSubstring(
			"--hooks-namespace=hooksns-job holds other workloads: Job nightly-backup is not one of kmaint's hook Jobs")))
	})
	t.Run("the operator's own", func(t *testing.T) {
		ns := namespace(t, "hooksns-own")
		user := "system:serviceaccount:" + ns + ":kmaint-operator"
		// Rights enough to run, so that what refuses it is the check.
		harness.Create(t, bed, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "hooksns-own-operator"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}})
		cfg := rest.CopyConfig(bed.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user,
			Groups: []string{"system:authenticated", "system:serviceaccounts", "system:serviceaccounts:" + ns}}
		NewWithT(t).Expect(start(cfg, ns)).To(MatchError(ContainSubstring("--hooks-namespace=hooksns-own is the operator's own namespace")))
	})
}
