package install

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/manifests"
	"github.com/kmaint/kmaint/test/testbed"
)

var bed *testbed.Bed

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &bed)) }

const namespace = "kmaint-system"

// TestDefaultObjects pins what config/default installs, by kind and name:
// other installers (the Helm chart) and the admission policy, which names
// the daemon's service account, depend on these names.
func TestDefaultObjects(t *testing.T) {
	var got []string
	for _, u := range manifests.Kustomize(t, "default") {
		got = append(got, manifests.ID(u))
	}
	want := []string{
		"Namespace/kmaint-system",
		"ServiceAccount/kmaint-system/kmaint-daemon",
		"ServiceAccount/kmaint-system/kmaint-operator",
		"Role/kmaint-system/kmaint-operator",
		"ClusterRole/kmaint-daemon",
		"ClusterRole/kmaint-operator",
		"ClusterRole/kmaint-metrics-reader",
		"RoleBinding/kmaint-system/kmaint-operator",
		"ClusterRoleBinding/kmaint-daemon",
		"ClusterRoleBinding/kmaint-operator",
		"Service/kmaint-system/kmaint-operator",
		"Deployment/kmaint-system/kmaint-operator",
		"PodDisruptionBudget/kmaint-system/kmaint-operator",
		"ValidatingAdmissionPolicy/kmaint-daemon-own-node",
		"ValidatingAdmissionPolicyBinding/kmaint-daemon-own-node",
		"ValidatingAdmissionPolicy/kmaint-daemon-events",
		"ValidatingAdmissionPolicyBinding/kmaint-daemon-events",
		"ValidatingAdmissionPolicy/kmaint-request-sources",
		"ValidatingAdmissionPolicyBinding/kmaint-request-sources",
		"ValidatingAdmissionPolicy/kmaint-operator-annotations",
		"ValidatingAdmissionPolicyBinding/kmaint-operator-annotations",
		"ValidatingAdmissionPolicy/kmaint-events",
		"ValidatingAdmissionPolicyBinding/kmaint-events",
		"ValidatingAdmissionPolicy/kmaint-hook-acknowledgements",
		"ValidatingAdmissionPolicyBinding/kmaint-hook-acknowledgements",
		"ValidatingAdmissionPolicy/kmaint-pool-selectors",
		"ValidatingAdmissionPolicyBinding/kmaint-pool-selectors",
		"ValidatingAdmissionPolicy/kmaint-request-overrides",
		"ValidatingAdmissionPolicyBinding/kmaint-request-overrides",
		"ValidatingAdmissionPolicy/kmaint-operator-creates",
		"ValidatingAdmissionPolicyBinding/kmaint-operator-creates",
		"ValidatingAdmissionPolicy/kmaint-hooks-namespace",
		"ValidatingAdmissionPolicyBinding/kmaint-hooks-namespace",
		"ValidatingAdmissionPolicy/kmaint-hook-priority-class",
		"ValidatingAdmissionPolicyBinding/kmaint-hook-priority-class",
		"Role/default/kmaint-daemon",
		"RoleBinding/default/kmaint-daemon",
		"Role/default/kmaint-operator",
		"RoleBinding/default/kmaint-operator",
		"DaemonSet/kmaint-system/kmaint-daemon",
		"Namespace/kmaint-hooks",
		"ServiceAccount/kmaint-hooks/kmaint-hook",
		"PriorityClass/kmaint-hook",
		"Role/kmaint-hooks/kmaint-operator",
		"RoleBinding/kmaint-hooks/kmaint-operator",
	}
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config/default renders other objects (-want +got):\n%s", diff)
	}
}

// TestDefaultAppliesDryRun applies every object config/default renders
// with a server-side dry run, after creating its namespace for real: the
// API server's validation, defaulting and admission accept them all.
func TestDefaultAppliesDryRun(t *testing.T) {
	ctx := context.Background()
	objs := manifests.Kustomize(t, "default")
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			if err := apply(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, u := range objs {
		t.Run(manifests.ID(u), func(t *testing.T) {
			if err := apply(ctx, u, client.DryRunAll); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestKubectlDeployDryRun runs make deploy's apply, kubectl's own kustomize
// and server-side apply, as a server-side dry run.
func TestKubectlDeployDryRun(t *testing.T) {
	ctx := context.Background()
	for _, u := range manifests.Kustomize(t, "namespace") {
		if err := apply(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := bed.WriteKubeconfig(path, "install-admin", "system:masters"); err != nil {
		t.Fatal(err)
	}
	// --force-conflicts: the admission test applies some of these objects
	// for real, as another field manager; make deploy is the only manager
	// of its objects.
	cmd := exec.Command(manifests.Kubectl(t), "--kubeconfig", path, "apply", "--server-side", "--dry-run=server", "--force-conflicts",
		"-k", filepath.Join(testbed.RepoRoot(), "config", "default"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply --server-side --dry-run=server -k config/default: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// TestPodsLockedDown checks the pod specs keep what their comments promise:
// no privileged container, no privilege escalation, a read-only root, every
// capability dropped and none added, RuntimeDefault seccomp; the operator
// not root; the daemon root (see config/daemon) without host namespaces,
// every host path read-only.
func TestPodsLockedDown(t *testing.T) {
	var deploy appsv1.Deployment
	var ds appsv1.DaemonSet
	for _, u := range manifests.Kustomize(t, "default") {
		switch u.GetKind() {
		case "Deployment":
			fromUnstructured(t, u, &deploy)
		case "DaemonSet":
			fromUnstructured(t, u, &ds)
		}
	}
	for name, spec := range map[string]corev1.PodSpec{"operator": deploy.Spec.Template.Spec, "daemon": ds.Spec.Template.Spec} {
		if spec.HostPID || spec.HostNetwork || spec.HostIPC {
			t.Errorf("%s uses a host namespace", name)
		}
		if sc := spec.SecurityContext; sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: seccomp profile is not RuntimeDefault", name)
		}
		for _, c := range spec.Containers {
			sc := c.SecurityContext
			switch {
			case sc == nil:
				t.Errorf("%s/%s has no security context", name, c.Name)
				continue
			case ptr.Deref(sc.Privileged, false):
				t.Errorf("%s/%s is privileged", name, c.Name)
			case ptr.Deref(sc.AllowPrivilegeEscalation, true):
				t.Errorf("%s/%s allows privilege escalation", name, c.Name)
			case !ptr.Deref(sc.ReadOnlyRootFilesystem, false):
				t.Errorf("%s/%s has a writable root file system", name, c.Name)
			case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
				t.Errorf("%s/%s: capabilities %+v, want drop ALL and add none", name, c.Name, sc.Capabilities)
			}
			if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Memory().IsZero() {
				t.Errorf("%s/%s has no memory request or limit", name, c.Name)
			}
			if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
				return e.Name == "GOMEMLIMIT" && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil &&
					e.ValueFrom.ResourceFieldRef.Resource == "limits.memory"
			}) {
				t.Errorf("%s/%s: GOMEMLIMIT does not follow the memory limit", name, c.Name)
			}
			if c.LivenessProbe == nil || c.ReadinessProbe == nil {
				t.Errorf("%s/%s lacks a liveness or readiness probe", name, c.Name)
			}
		}
	}
	if sc := deploy.Spec.Template.Spec.SecurityContext; sc == nil || !ptr.Deref(sc.RunAsNonRoot, false) {
		t.Error("the operator may run as root")
	}
	daemon := ds.Spec.Template.Spec
	if sc := daemon.SecurityContext; sc == nil || ptr.Deref(sc.RunAsUser, -1) != 0 {
		t.Error("the daemon does not run as root: the journal's trusted _UID and logind need uid 0")
	}
	if !slices.ContainsFunc(daemon.Tolerations, func(tol corev1.Toleration) bool {
		return tol.Operator == corev1.TolerationOpExists && tol.Key == "" && tol.Effect == ""
	}) {
		t.Error("the daemon does not tolerate every taint")
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range daemon.Volumes {
		volumes[v.Name] = v
	}
	// The daemon's token is the daemon container's alone: the sentinel
	// container, which runs as nobody and sees the host's /run, has none
	// to lose.
	if ptr.Deref(daemon.AutomountServiceAccountToken, true) {
		t.Error("the daemon pod mounts its service account token into every container")
	}
	for _, c := range slices.Concat(daemon.InitContainers, daemon.Containers) {
		i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
			v := volumes[m.Name]
			return v.Projected != nil && slices.ContainsFunc(v.Projected.Sources, func(s corev1.VolumeProjection) bool { return s.ServiceAccountToken != nil })
		})
		switch {
		case c.Name == "daemon" && (i < 0 || c.VolumeMounts[i].MountPath != "/var/run/secrets/kubernetes.io/serviceaccount"):
			t.Errorf("the daemon container has no service account token where client-go looks: %v", c.VolumeMounts)
		case c.Name != "daemon" && i >= 0:
			t.Errorf("container %s mounts the daemon's service account token", c.Name)
		}
	}
	for _, c := range daemon.Containers {
		for _, m := range c.VolumeMounts {
			// The one writable mount: where the sentinel container, as
			// nobody, writes its reports, an emptyDir in memory.
			writable := c.Name == "sentinel" && m.Name == "sentinel-report" && volumes[m.Name].EmptyDir != nil
			if !m.ReadOnly && !writable {
				t.Errorf("daemon mount %s (%s) of container %s is writable", m.Name, m.MountPath, c.Name)
			}
			if v := volumes[m.Name]; v.HostPath != nil && !m.ReadOnly {
				t.Errorf("host path %s is mounted writable in container %s", v.HostPath.Path, c.Name)
			}
		}
		if c.Name == "sentinel" {
			// It sees the host's /run: as nobody, so that the sockets
			// there stay out of its reach.
			if sc := c.SecurityContext; sc == nil || ptr.Deref(sc.RunAsUser, 0) != 65534 || !ptr.Deref(sc.RunAsNonRoot, false) {
				t.Errorf("the sentinel container does not run as nobody: %+v", c.SecurityContext)
			}
			if slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
				return volumes[m.Name].HostPath != nil && volumes[m.Name].HostPath.Path != "/var/run"
			}) {
				t.Errorf("the sentinel container mounts more of the host than /var/run: %v", c.VolumeMounts)
			}
		} else if slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
			v := volumes[m.Name].HostPath
			return v != nil && (v.Path == "/run" || v.Path == "/var/run")
		}) {
			t.Errorf("container %s, which runs as root, mounts the host's /run, with the container runtime's socket in it", c.Name)
		}
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
		}) {
			t.Error("the daemon's NODE_NAME does not come from spec.nodeName")
		}
	}
}

func fromUnstructured(t testing.TB, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true); err != nil {
		t.Fatalf("%s: %v", manifests.ID(u), err)
	}
}
