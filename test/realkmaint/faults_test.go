package realkmaint

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/test/realcluster"
)

// nodeBusybox is the busybox image hack/cluster-assets.sh builds, which
// every node imports at each boot.
const nodeBusybox = "docker.io/library/busybox:kmaint"

// slowToLeave is how long the pod that slows the drain down takes to stop
// (its preStop hook): long beside the time it takes to delete a pod and see
// it gone, short beside the test's timeouts.
const slowToLeave = 20 * time.Second

// operatorDeletedMidDrain deletes the leading operator's pod while it is
// draining a node for a NodeMaintenance. The drain takes a while on purpose:
// a pod on the node stops slowly (a preStop hook that waits). The other
// replica takes the lease over and carries on from what the API server
// holds: the node reboots exactly once, the request succeeds, and the
// cordon is undone.
func operatorDeletedMidDrain(t *testing.T, c *realcluster.Cluster, kc client.Client) {
	g := NewWithT(t)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.RestConfig())
	g.Expect(err).NotTo(HaveOccurred())

	leader := leaderPod(g, cs)
	// A node the leader does not run on: its drain would evict the leader
	// itself, which is not the fault under test.
	var target *realcluster.Node
	for _, n := range c.Nodes() {
		if n.Name() != leader.Spec.NodeName {
			target = n
			break
		}
	}
	ns := testNamespace(t, cs, "faults-drain")
	slow := slowPodOn(t, cs, ns, target.Name())

	bootsBefore := bootCounts(c)
	before, err := target.BootID(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	nm, err := cmd.Request(ctx, kc, &bytes.Buffer{}, cmd.RequestOptions{Node: target.Name(), Reason: "operator deleted mid-drain"})
	g.Expect(err).NotTo(HaveOccurred())

	// Draining: admitted, cordoned, the slow pod evicted and still stopping.
	g.Eventually(func(g Gomega) {
		var node corev1.Node
		g.Expect(kc.Get(ctx, client.ObjectKey{Name: target.Name()}, &node)).To(Succeed())
		g.Expect(node.Annotations).To(HaveKey(protocol.Admitted))
		g.Expect(node.Spec.Unschedulable).To(BeTrue())
		p, err := cs.CoreV1().Pods(ns).Get(ctx, slow, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.DeletionTimestamp).NotTo(BeNil(), "evicted")
	}, timeout, 100*time.Millisecond).Should(Succeed())
	g.Expect(cs.CoreV1().Pods(Namespace).Delete(ctx, leader.Name, metav1.DeleteOptions{})).To(Succeed())
	deletedAt := time.Now()
	// The slow pod still there after the delete means the drain was not
	// done when the leader went: the approval is the next leader's.
	_, err = cs.CoreV1().Pods(ns).Get(ctx, slow, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred(), "the drain was still waiting for %s when the leader was deleted", slow)
	var node corev1.Node
	g.Expect(kc.Get(ctx, client.ObjectKey{Name: target.Name()}, &node)).To(Succeed())
	g.Expect(node.Annotations).NotTo(HaveKey(protocol.RebootApproved), "not approved yet when the leader was deleted")

	g.Eventually(func(g Gomega) {
		holder := operatorLeaseHolder(g, cs)
		g.Expect(holder).To(HavePrefix("kmaint-operator-"))
		g.Expect(holder).NotTo(HavePrefix(leader.Name+"_"), "another replica leads")
	}, timeout, time.Second).Should(Succeed())
	done := expectSucceeded(g, kc, nm)
	t.Logf("%s rebooted %s after its leader was deleted mid-drain", target.Name(), time.Since(deletedAt).Round(time.Second))
	after, err := target.BootID(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(done.Status.BootIDBefore).To(Equal(before))
	g.Expect(done.Status.BootIDAfter).To(Equal(after))
	g.Expect(after).NotTo(Equal(before))
	g.Eventually(func(g Gomega) { settledNode(g, kc, target.Name()) }, timeout, time.Second).Should(Succeed())
	expectRebootedOnce(g, c, bootsBefore, target)
	expectOperatorAvailable(g, cs)
}

// daemonDeletedAfterApproval deletes a node's daemon pod the moment its
// reboot is approved for the boot it runs. Whether the old pod asked logind
// before it went or its replacement in the same boot finds the approval,
// the node reboots exactly once and the request completes.
func daemonDeletedAfterApproval(t *testing.T, c *realcluster.Cluster, kc client.Client) {
	g := NewWithT(t)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.RestConfig())
	g.Expect(err).NotTo(HaveOccurred())

	target := c.Nodes()[2]
	daemon := daemonPodOn(g, cs, target.Name())
	bootsBefore := bootCounts(c)
	before, err := target.BootID(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	nm, err := cmd.Request(ctx, kc, &bytes.Buffer{}, cmd.RequestOptions{Node: target.Name(), Reason: "daemon deleted after approval"})
	g.Expect(err).NotTo(HaveOccurred())

	// Polled often: the daemon acts within moments of the approval.
	g.Eventually(func(g Gomega) {
		var node corev1.Node
		g.Expect(kc.Get(ctx, client.ObjectKey{Name: target.Name()}, &node)).To(Succeed())
		g.Expect(node.Annotations).To(HaveKeyWithValue(protocol.RebootApproved, before), "approved for the boot the node runs")
	}, 2*timeout, 20*time.Millisecond).Should(Succeed())
	err = cs.CoreV1().Pods(Namespace).Delete(ctx, daemon.Name, metav1.DeleteOptions{})
	// Gone already is fine: the node may have rebooted under it.
	g.Expect(client.IgnoreNotFound(err)).To(Succeed())

	done := expectSucceeded(g, kc, nm)
	after, err := target.BootID(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after).NotTo(Equal(before))
	g.Expect(done.Status.BootIDBefore).To(Equal(before))
	g.Expect(done.Status.BootIDAfter).To(Equal(after))
	g.Eventually(func(g Gomega) { settledNode(g, kc, target.Name()) }, timeout, time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(daemonPodOn(g, cs, target.Name()).UID).NotTo(Equal(daemon.UID), "a new daemon pod on the node")
	}, timeout, time.Second).Should(Succeed())
	expectRebootedOnce(g, c, bootsBefore, target)
}

// expectSucceeded waits for the NodeMaintenance to succeed, failing at once
// if it fails, and returns it.
func expectSucceeded(g Gomega, kc client.Client, nm *v1alpha1.NodeMaintenance) *v1alpha1.NodeMaintenance {
	var done v1alpha1.NodeMaintenance
	g.Eventually(func(g Gomega) {
		g.Expect(kc.Get(context.Background(), client.ObjectKeyFromObject(nm), &done)).To(Succeed())
		g.Expect(done.Status.Phase).NotTo(Equal(v1alpha1.PhaseFailed), "%+v", done.Status.Conditions)
		g.Expect(done.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
	}, 2*timeout, time.Second).Should(Succeed())
	return &done
}

// operatorLeaseHolder is the identity holding the operator's leader
// election Lease: its pod's name, "_", a random suffix.
func operatorLeaseHolder(g Gomega, cs kubernetes.Interface) string {
	leases, err := cs.CoordinationV1().Leases(Namespace).List(context.Background(), metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	for _, l := range leases.Items {
		if h := leaseHolder(l); strings.HasPrefix(h, "kmaint-operator-") {
			return h
		}
	}
	return ""
}

// leaderPod is the operator pod that leads.
func leaderPod(g Gomega, cs kubernetes.Interface) *corev1.Pod {
	var pod *corev1.Pod
	g.Eventually(func(g Gomega) {
		name, _, ok := strings.Cut(operatorLeaseHolder(g, cs), "_")
		g.Expect(ok).To(BeTrue(), "a leader")
		var err error
		pod, err = cs.CoreV1().Pods(Namespace).Get(context.Background(), name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}, timeout, time.Second).Should(Succeed())
	return pod
}

// expectOperatorAvailable waits for both operator replicas to be available
// again, as the next test expects them.
func expectOperatorAvailable(g Gomega, cs kubernetes.Interface) {
	g.Eventually(func(g Gomega) {
		d, err := cs.AppsV1().Deployments(Namespace).Get(context.Background(), "kmaint-operator", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(2), "operator replicas available")
		g.Expect(d.Status.UpdatedReplicas).To(BeEquivalentTo(2))
	}, timeout, time.Second).Should(Succeed())
}

// daemonPodOn is the Running kmaint-daemon pod on the node.
func daemonPodOn(g Gomega, cs kubernetes.Interface, node string) *corev1.Pod {
	ctx := context.Background()
	ds, err := cs.AppsV1().DaemonSets(Namespace).Get(ctx, "kmaint-daemon", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	pods, err := cs.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: metav1.FormatLabelSelector(ds.Spec.Selector), FieldSelector: "spec.nodeName=" + node})
	g.Expect(err).NotTo(HaveOccurred())
	var running []corev1.Pod
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running = append(running, p)
		}
	}
	g.Expect(running).To(HaveLen(1), "one daemon pod running on %s", node)
	return &running[0]
}

// testNamespace creates a namespace for t's workloads and deletes it at
// the end, waiting until it is gone.
func testNamespace(t *testing.T, cs kubernetes.Interface, name string) string {
	g := NewWithT(t)
	ctx := context.Background()
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		g := NewWithT(t)
		g.Expect(client.IgnoreNotFound(cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}))).To(Succeed())
		g.Eventually(func() bool {
			_, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, timeout, time.Second).Should(BeTrue(), "namespace %s deleted", name)
	})
	return name
}

// slowPodOn runs a Deployment of one pod on the node that takes
// slowToLeave to stop (a preStop hook that waits), and returns the pod's
// name once it is Ready. Its replacement, bound to the same node, waits
// until the node is uncordoned.
func slowPodOn(t *testing.T, cs kubernetes.Interface, ns, node string) string {
	g := NewWithT(t)
	ctx := context.Background()
	labels := map[string]string{"app": "slow-to-leave"}
	wait := int64(slowToLeave / time.Second)
	_, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "slow-to-leave"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{corev1.LabelHostname: node},
					TerminationGracePeriodSeconds: ptr.To(3 * wait),
					Containers: []corev1.Container{{
						Name: "main", Image: nodeBusybox, ImagePullPolicy: corev1.PullNever,
						// PID 1 ignores SIGTERM unless it traps it: it exits
						// once the preStop hook is over, not at the grace
						// period's end.
						Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
						Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
							Exec: &corev1.ExecAction{Command: []string{"sleep", strconv.FormatInt(wait, 10)}},
						}},
					}},
				},
			},
		},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	// Once the test is over its slowness is of no use: the pods go at once,
	// before the namespace is deleted.
	t.Cleanup(func() {
		_ = cs.AppsV1().Deployments(ns).Delete(ctx, "slow-to-leave", metav1.DeleteOptions{})
		_ = cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
			metav1.ListOptions{LabelSelector: "app=slow-to-leave"})
	})
	var name string
	g.Eventually(func(g Gomega) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=slow-to-leave"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods.Items).To(HaveLen(1))
		p := pods.Items[0]
		g.Expect(p.Spec.NodeName).To(Equal(node))
		g.Expect(p.Status.Conditions).To(ContainElement(And(
			HaveField("Type", corev1.PodReady), HaveField("Status", corev1.ConditionTrue))))
		name = p.Name
	}, timeout, time.Second).Should(Succeed())
	return name
}
