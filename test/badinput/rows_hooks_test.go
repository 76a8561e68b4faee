package badinput

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/sim"
)

// The rows below act as a CI system that RBAC lets create pods and Jobs in
// every namespace, as Job runners often may.
const hooksSurface = "hooks namespace/cluster-wide create"

const hooksNamespace = "kmaint-hooks"

var ciOnce sync.Once

// ciClient is the CI system's client; its role is made once.
func ciClient(t *testing.T) client.Client {
	ciOnce.Do(func() {
		ctx := context.Background()
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "matrix-ci"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"", "batch"}, Resources: []string{"pods", "jobs"}, Verbs: []string{"create", "get", "list", "delete"}}}}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "matrix-ci"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "matrix-ci"}}}
		for _, o := range []client.Object{role, binding} {
			if err := bed.Client.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	})
	cfg := rest.CopyConfig(bed.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "matrix-ci", Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: bed.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// createRefused creates obj as the CI system until it is refused: a policy
// is enforced a moment after its binding is made. One let through is
// deleted, and tried again under a new name (obj has a generateName).
func createRefused(t *testing.T, obj client.Object) error {
	c := ciClient(t)
	var refused error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		o := obj.DeepCopyObject().(client.Object)
		if err := c.Create(ctx, o); err != nil {
			refused = err
			return true, nil
		}
		_ = bed.Client.Delete(ctx, o)
		return false, nil
	})
	if refused == nil {
		return nil // let through for 30 s: the row fails, as it should
	}
	return errors.Join(refused, err)
}

func ciPod(ns string, priorityClass string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "ci-"},
		Spec: corev1.PodSpec{
			PriorityClassName: priorityClass,
			Containers: []corev1.Container{{Name: "root", Image: "busybox", Command: []string{"chroot", "/host", "sh"},
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
				VolumeMounts:    []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}}},
			Volumes: []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}},
		},
	}
}

func hooksNamespaceRows() []row {
	refuse := func(name, says string, obj func() client.Object) row {
		return row{surface: hooksSurface, name: name, want: refusedNaming(says),
			send: func(t *testing.T, _ *env) (shown, error) { return nil, createRefused(t, obj()) }}
	}
	return []row{
		refuse("a privileged pod with the host's / in the hooks namespace", "are made only by the Job controller",
			func() client.Object { return ciPod(hooksNamespace, "") }),
		refuse("a Job under a hook's name, running true", "are made, changed and deleted only by the kmaint operator",
			func() client.Object {
				name := protocol.HookJobName("upgrade", protocol.HookToken(openNodes[0], openPool, "boot-0", time.Now(), protocol.BeforeReboot), 1)
				return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: hooksNamespace, GenerateName: name + "-"},
					Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
						Containers: []corev1.Container{{Name: "work", Image: "busybox", Command: []string{"true"}}}}}}}
			}),
		refuse("a pod in the hook pods' priority class elsewhere", "PriorityClass kmaint-hook is for kmaint's hook pods",
			func() client.Object { return ciPod("default", "kmaint-hook") }),
		{surface: operatorSurface, name: "hooks namespace holding another workload", want: refusedNaming("holds other workloads: pod"),
			send: func(t *testing.T, _ *env) (shown, error) {
				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "matrix-hooks-"}}
				harness.Create(t, bed, ns)
				p := ciPod(ns.Name, "")
				p.GenerateName, p.Name = "", "ci-runner"
				harness.Create(t, bed, p)
				op, err := sim.StartOperator(context.Background(), bed.Config, operator.Options{HooksNamespace: ns.Name})
				if err == nil {
					return nil, op.Stop()
				}
				return nil, err
			}},
	}
}
