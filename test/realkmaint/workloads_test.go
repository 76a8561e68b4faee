package realkmaint

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kmaint/kmaint/test/harness"
)

// busybox is the image hack/cluster-assets.sh builds and every node imports
// at boot; no registry can be reached.
const busybox = "docker.io/library/busybox:kmaint"

// The workloads that run during the rollout, as a cluster's would.
const (
	workloadNamespace = "workloads"
	// guarded is a Deployment of one pod per node, kept at minAvailable of
	// them by a PodDisruptionBudget: the drain of a node can evict its pod
	// only once every other pod is back and Ready, so the drain of the
	// next node waits for the rebooted one to take its pod back (the
	// anti-affinity keeps the pod off every other node).
	guarded = "guarded"
	// guardedMinAvailable leaves one of the three pods free to go.
	guardedMinAvailable = 2
	// everywhere is a DaemonSet: drains leave its pods, and each comes
	// back with its node.
	everywhere = "everywhere"
	// scratch is a Deployment whose pod keeps data in an emptyDir, which a
	// drain may evict only when the pool says the data may go.
	scratch = "scratch"
)

// workloads are the workloads' pods as they ran before the rollout.
type workloads struct {
	guardedPods map[types.UID]string // by UID, their node
	scratchPod  types.UID
}

// startWorkloads creates the workloads and waits until every pod runs: one
// guarded pod per node, a DaemonSet pod on each, the scratch pod with its
// data written. They are deleted, with their namespace, when t ends.
func startWorkloads(t *testing.T, cs kubernetes.Interface, nodes int) workloads {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workloadNamespace}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { deleteNamespace(t, cs, workloadNamespace) })

	apps := cs.AppsV1().Deployments(workloadNamespace)
	replicas := int32(nodes)
	onePerNode := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: appSelector(guarded), TopologyKey: corev1.LabelHostname,
		}},
	}}
	guardedPod := podTemplate(guarded, "sleep", "3600")
	guardedPod.Spec.Affinity = onePerNode
	_, err = apps.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: guarded},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas, Selector: appSelector(guarded), Template: guardedPod},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	minAvailable := intstr.FromInt32(guardedMinAvailable)
	_, err = cs.PolicyV1().PodDisruptionBudgets(workloadNamespace).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: guarded},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: appSelector(guarded)},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	_, err = cs.AppsV1().DaemonSets(workloadNamespace).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: everywhere},
		Spec:       appsv1.DaemonSetSpec{Selector: appSelector(everywhere), Template: podTemplate(everywhere, "sleep", "3600")},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	scratchPod := podTemplate(scratch, "sh", "-c", `date >/scratch/started && exec sleep 3600`)
	scratchPod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	scratchPod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	one := int32(1)
	_, err = apps.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: scratch},
		Spec:       appsv1.DeploymentSpec{Replicas: &one, Selector: appSelector(scratch), Template: scratchPod},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	var w workloads
	g.Eventually(func(g Gomega) {
		w = workloads{guardedPods: map[types.UID]string{}}
		pods := healthyPods(g, cs, guarded)
		g.Expect(pods).To(HaveLen(nodes), "guarded pods Ready")
		for _, p := range pods {
			w.guardedPods[p.UID] = p.Spec.NodeName
		}
		g.Expect(daemonSetNodes(g, cs)).To(HaveLen(nodes), "DaemonSet pods Ready")
		pods = healthyPods(g, cs, scratch)
		g.Expect(pods).To(HaveLen(1), "scratch pod Ready")
		w.scratchPod = pods[0].UID
	}, timeout, time.Second).Should(Succeed())
	return w
}

// podTemplate is a busybox pod that stops at once when asked: sleep, as
// PID 1, ignores SIGTERM, and a drain should not wait out the default 30s
// grace period for each.
func podTemplate(app string, command ...string) corev1.PodTemplateSpec {
	grace := int64(1)
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "main", Image: busybox, ImagePullPolicy: corev1.PullNever, Command: command,
			}},
		},
	}
}

func appSelector(app string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
}

// healthyPods lists the app's pods that a PodDisruptionBudget counts.
func healthyPods(g Gomega, cs kubernetes.Interface, app string) []corev1.Pod {
	pods, err := cs.CoreV1().Pods(workloadNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	g.Expect(err).NotTo(HaveOccurred())
	var out []corev1.Pod
	for _, p := range pods.Items {
		if harness.Healthy(&p) {
			out = append(out, p)
		}
	}
	return out
}

// daemonSetNodes maps each node with a Ready pod of the DaemonSet to when
// that pod's container last started.
func daemonSetNodes(g Gomega, cs kubernetes.Interface) map[string]time.Time {
	out := map[string]time.Time{}
	for _, p := range healthyPods(g, cs, everywhere) {
		var started time.Time
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Running != nil {
				started = s.State.Running.StartedAt.Time
			}
		}
		out[p.Spec.NodeName] = started
	}
	return out
}

// deleteNamespace deletes the namespace and waits until it is gone with
// its pods, so that the next test drains no pod of this one.
func deleteNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	ctx := context.Background()
	if err := cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete namespace %s: %v", name, err)
		return
	}
	NewWithT(t).Eventually(func() error {
		_, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return err
	}, timeout, time.Second).Should(WithTransform(apierrors.IsNotFound, BeTrue()), "namespace %s deleted", name)
}
