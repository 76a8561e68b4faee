package install

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/manifests"
)

const hooksNamespace = "kmaint-hooks"

// privilegedPod is what a hook's pod may be: privileged, the host's /
// mounted, pinned to a node.
func privilegedPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeName: "some-node",
			Containers: []corev1.Container{{Name: "root", Image: "busybox", Command: []string{"chroot", "/host"},
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
				VolumeMounts:    []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}}},
			Volumes: []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}},
		},
	}
}

func hookJob(ns, name string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "work", Image: "busybox", Command: []string{"true"}}},
		}}},
	}
}

// emptyHooksNamespace leaves the hooks namespace empty when the test ends,
// as an administrator would: the API server here has no controller that
// finishes a deletion (no garbage collector for a Job's finalizer, no
// kubelet for a bound pod), and a test after this one runs the operator,
// which refuses a hooks namespace that holds anything but its own.
func emptyHooksNamespace(t *testing.T) {
	t.Cleanup(func() {
		ctx := context.Background()
		var jobs batchv1.JobList
		var pods corev1.PodList
		if err := errors.Join(bed.Client.List(ctx, &jobs, client.InNamespace(hooksNamespace)),
			bed.Client.List(ctx, &pods, client.InNamespace(hooksNamespace))); err != nil {
			t.Errorf("list the hooks namespace: %v", err)
			return
		}
		var objs []client.Object
		for i := range jobs.Items {
			objs = append(objs, &jobs.Items[i])
		}
		for i := range pods.Items {
			objs = append(objs, &pods.Items[i])
		}
		for _, o := range objs {
			err := errors.Join(
				client.IgnoreNotFound(bed.Client.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))),
				client.IgnoreNotFound(bed.Client.Delete(ctx, o, client.GracePeriodSeconds(0))))
			if err != nil {
				t.Errorf("delete %T %s: %v", o, o.GetName(), err)
			}
		}
	})
}

// serviceAccountUser impersonates a service account as its token would
// authenticate it.
func serviceAccountUser(t *testing.T, ns, name string) client.Client {
	return impersonating(t, "system:serviceaccount:"+ns+":"+name, "system:serviceaccounts", "system:serviceaccounts:"+ns)
}

// TestHooksNamespaceConfined installs kmaint's admission policies for real:
// a CI system that RBAC lets create, change and exec into pods and Jobs
// anywhere (as Job runners often may) can make neither in the hooks
// namespace, whose pods may be privileged, nor touch a hook's pod there;
// elsewhere it still may. The operator makes its Jobs there, and the Job
// controller, the TTL controller and the cluster's administrators do what
// they do for every Job.
func TestHooksNamespaceConfined(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	installIdentities(t)
	emptyHooksNamespace(t)
	const policy = "kmaint-hooks-namespace"
	ci := userWith(t, "ci-runner", rbacv1.PolicyRule{
		APIGroups: []string{"", "batch"},
		Resources: []string{"pods", "pods/status", "pods/exec", "pods/ephemeralcontainers", "pods/eviction", "jobs", "jobs/status"},
		Verbs:     []string{"get", "list", "create", "update", "patch", "delete"},
	})
	ciClientset := func() kubernetes.Interface {
		cfg := rest.CopyConfig(bed.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "ci-runner", Groups: []string{"system:authenticated"}}
		return kubernetes.NewForConfigOrDie(cfg)
	}()

	// The binding takes a moment to be enforced.
	waitForPolicy(t, policy, func() error {
		return ci.Create(ctx, privilegedPod(hooksNamespace, "ci-probe-"+time.Now().Format("150405.000000000")[7:]))
	})
	expectRefusedBy(t, policy, "a privileged pod made by a CI system", ci.Create(ctx, privilegedPod(hooksNamespace, "ci-root")),
		"are made only by the Job controller")
	expectRefusedBy(t, policy, "a Job made by a CI system", ci.Create(ctx, hookJob(hooksNamespace, "kmaint-upgrade-0123456789")),
		"are made, changed and deleted only by the kmaint operator; ci-runner may not CREATE jobs")

	// The operator's Job, and the Job controller's pod for it.
	operator := serviceAccountUser(t, manifests.Namespace, "kmaint-operator")
	job := hookJob(hooksNamespace, "kmaint-upgrade-abcdef")
	g.Expect(operator.Create(ctx, job)).To(Succeed(), "the operator makes its Job")
	jobController := serviceAccountUser(t, "kube-system", "job-controller")
	pod := privilegedPod(hooksNamespace, job.Name+"-x7k2p")
	pod.Labels = map[string]string{batchv1.ControllerUidLabel: string(job.UID), batchv1.JobNameLabel: job.Name}
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	g.Expect(jobController.Create(ctx, pod)).To(Succeed(), "the Job controller makes the Job's pod")
	done := job.DeepCopy()
	done.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "test"}}
	g.Expect(jobController.Status().Update(ctx, done)).To(Succeed(), "the Job controller writes the Job's status")

	// What the CI system may not do to them.
	mergePatch := func(c interface {
		Patch(context.Context, client.Object, client.Patch, ...client.PatchOption) error
	}, obj client.Object, patch string) error {
		return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)))
	}
	subPatch := func(c client.SubResourceWriter, obj client.Object, patch string) error {
		return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)))
	}
	expectRefusedBy(t, policy, "the operator's Job's status forged", subPatch(ci.Status(), job.DeepCopy(), `{"status":{"succeeded":1}}`),
		"ci-runner may not UPDATE jobs/status kmaint-upgrade-abcdef")
	expectRefusedBy(t, policy, "the operator's Job deleted", ci.Delete(ctx, job.DeepCopy()), "ci-runner may not DELETE jobs kmaint-upgrade-abcdef")
	expectRefusedBy(t, policy, "the pod given another Job's labels", mergePatch(ci, pod.DeepCopy(), `{"metadata":{"labels":{"batch.kubernetes.io/controller-uid":"another"}}}`),
		"the labels and owners of pods in kmaint-hooks are changed only by the Job controller")
	expectRefusedBy(t, policy, "the pod's owner taken away", mergePatch(ci, pod.DeepCopy(), `{"metadata":{"ownerReferences":null}}`),
		"the labels and owners of pods in kmaint-hooks are changed only by the Job controller")
	expectRefusedBy(t, policy, "the pod marked Succeeded", subPatch(ci.Status(), pod.DeepCopy(), `{"status":{"phase":"Succeeded"}}`),
		"may not UPDATE pods/status")
	expectRefusedBy(t, policy, "an ephemeral container added", subPatch(ci.SubResource("ephemeralcontainers"), pod.DeepCopy(),
		`{"spec":{"ephemeralContainers":[{"name":"debug","image":"busybox"}]}}`), "may not UPDATE pods/ephemeralcontainers")
	exec := ciClientset.CoreV1().RESTClient().Post().Namespace(hooksNamespace).Resource("pods").Name(pod.Name).SubResource("exec").
		Param("container", "root").Param("command", "sh").Param("stdout", "true").Do(ctx).Error()
	expectRefusedBy(t, policy, "an exec into the pod", exec, "ci-runner may not CONNECT pods/exec "+pod.Name)
	// Its annotations are not the policy's.
	g.Expect(mergePatch(ci, pod.DeepCopy(), `{"metadata":{"annotations":{"ci.example/seen":"yes"}}}`)).To(Succeed())

	// Elsewhere the CI system does what RBAC lets it.
	g.Expect(ci.Create(ctx, hookJob("default", "ci-job"))).To(Succeed(), "a Job in another namespace")
	g.Expect(ci.Create(ctx, privilegedPod("default", "ci-pod"))).To(Succeed(), "a pod in another namespace")

	// The cluster's administrators are the break-glass; the TTL controller
	// deletes a finished Job, and the garbage collector its pod's owner.
	admin := impersonating(t, "kim", "system:masters")
	g.Expect(mergePatch(admin, pod.DeepCopy(), `{"metadata":{"labels":{"debug":"kim"}}}`)).To(Succeed())
	g.Expect(mergePatch(serviceAccountUser(t, "kube-system", "generic-garbage-collector"), pod.DeepCopy(),
		`{"metadata":{"ownerReferences":null}}`)).To(Succeed())
	g.Expect(serviceAccountUser(t, "kube-system", "ttl-after-finished-controller").Delete(ctx, job.DeepCopy(),
		client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
	// Eviction, like deletion, is anyone's RBAC lets: it fails a hook, and
	// passes nothing.
	g.Expect(ciClientset.CoreV1().Pods(hooksNamespace).EvictV1(ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}})).To(Succeed())
}

// TestHookPriorityClassConfined: the hook pods' PriorityClass, which
// preempts pods of a lower priority, is taken by pods in the hooks
// namespace only.
func TestHookPriorityClassConfined(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	installIdentities(t)
	emptyHooksNamespace(t)
	for _, u := range manifests.Kustomize(t, "default") {
		if u.GetKind() == "PriorityClass" {
			g.Expect(apply(ctx, u)).To(Succeed())
		}
	}
	const policy = "kmaint-hook-priority-class"
	tenant := userWith(t, "tenant", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}})
	withClass := func(ns, name string) *corev1.Pod {
		spec := hookJob(ns, name).Spec.Template.Spec
		spec.PriorityClassName = "kmaint-hook"
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	}
	waitForPolicy(t, policy, func() error {
		return tenant.Create(ctx, withClass("default", "tenant-probe-"+time.Now().Format("150405.000000000")[7:]))
	})
	expectRefusedBy(t, policy, "a tenant's pod in the hook pods' class", tenant.Create(ctx, withClass("default", "tenant-high")),
		"PriorityClass kmaint-hook is for kmaint's hook pods, in namespace kmaint-hooks")
	plain := withClass("default", "tenant-plain")
	plain.Spec.PriorityClassName = ""
	g.Expect(tenant.Create(ctx, plain)).To(Succeed(), "a tenant's pod without it")
	hookPod := withClass(hooksNamespace, "kmaint-check-0123-abcde")
	g.Expect(serviceAccountUser(t, "kube-system", "job-controller").Create(ctx, hookPod)).To(Succeed(), "a hook's pod")
	g.Expect(*hookPod.Spec.Priority).To(BeEquivalentTo(1000000), "the class gives the priority")
}
