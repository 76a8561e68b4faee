package realkmaint

import (
	"cmp"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/test/amtest"
	"github.com/kmaint/kmaint/test/promtest"
	"github.com/kmaint/kmaint/test/realcluster"
)

// timeout bounds each wait: pods start on nodes of a shared, loaded machine.
const timeout = 5 * time.Minute

// TestChartInstallsAndRunsOnRealNodes installs kmaint with helm on three
// real nodes and checks what a user checks first: the operator's two
// replicas Available with one leader, a daemon Ready on every node, and each
// daemon reporting the boot its node really runs (its kubelet's
// status.nodeInfo.bootID), which on these container nodes it reads from the
// file the chart's daemon.bootIDFile names. Then kmaint reboots the nodes
// for real: one for a NodeMaintenance, one for root's request on the node,
// all for a config rollout with workloads running, two at once in pools with
// and without Alertmanager silences, one for a metric policy
// asking a real Prometheus, two for a schedule policy; and kmaint is
// upgraded and downgraded while rollouts are under way. Each leaves the
// cluster as it found it: its pools, policies and workloads deleted, every
// node uncordoned and Ready.
func TestChartInstallsAndRunsOnRealNodes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// Two checkouts on one machine can run this at once under two names
	// (a Start cleans up whatever a cluster of its name left, running or not).
	name := cmp.Or(os.Getenv("KMAINT_REALCLUSTER_NAME"), "kmaint")
	cfg := realcluster.Config{Name: name, Nodes: 3, Log: realcluster.TestLog(t)}
	realcluster.Require(t, cfg)
	c, err := realcluster.Start(ctx, cfg)
	g.Expect(err).NotTo(HaveOccurred(), "start the cluster")
	t.Cleanup(func() {
		// Killed, not powered off: test/realcluster tests the orderly
		// poweroff, and its kubelets' graceful shutdowns cost 20 s here.
		if err := c.Kill(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("kill the cluster: %v", err)
		}
	})

	// The Prometheus that RebootPolicies ask, on the host, scraping series
	// the test sets; the operator's pods reach it inside the cluster.
	prom := prometheusSeries{exporter: promtest.NewExporter(t)}
	prom.server = promtest.Start(t, promtest.Options{Targets: []string{prom.exporter.Address()}})
	promInCluster, err := c.Expose(strings.TrimPrefix(prom.server.URL(), "http://"))
	g.Expect(err).NotTo(HaveOccurred(), "expose Prometheus inside the cluster")
	// The Alertmanager that holds the pools' silences, on the host too,
	// notifying a webhook the test reads.
	var alerts alerting
	alerts.receiver = amtest.NewReceiver(t)
	alerts.am = amtest.StartWith(t, amtest.Options{Webhook: alerts.receiver.URL()})
	amInCluster, err := c.Expose(strings.TrimPrefix(alerts.am.URL(), "http://"))
	g.Expect(err).NotTo(HaveOccurred(), "expose Alertmanager inside the cluster")
	g.Expect(Install(ctx, c, InstallOptions{Timeout: timeout, Set: []string{"prometheus.url=http://" + promInCluster,
		"alertmanager.urls={http://" + amInCluster + "}"}})).To(Succeed())

	cs, err := kubernetes.NewForConfig(c.RestConfig())
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		d, err := cs.AppsV1().Deployments(Namespace).Get(ctx, "kmaint-operator", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(2), "operator replicas available")
	}, timeout, time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		leases, err := cs.CoordinationV1().Leases(Namespace).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(leases.Items).To(ContainElement(WithTransform(leaseHolder, HavePrefix("kmaint-operator-"))), "a leader elected")
	}, timeout, time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		ds, err := cs.AppsV1().DaemonSets(Namespace).Get(ctx, "kmaint-daemon", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ds.Status.NumberReady).To(BeEquivalentTo(len(c.Nodes())), "daemons Ready")
		g.Expect(daemonPodNodes(g, cs, ds)).To(ConsistOf(nodeNames(c)))
	}, timeout, time.Second).Should(Succeed())

	for _, n := range c.Nodes() {
		inside, err := n.BootID(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func(g Gomega) {
			node, err := cs.CoreV1().Nodes().Get(ctx, n.Name(), metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(node.Status.NodeInfo.BootID).To(Equal(inside))
			var state protocol.DaemonState
			found, err := protocol.Decode(node, protocol.State, &state)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(found).To(BeTrue(), "the daemon on %s reported its state", n.Name())
			g.Expect(state.BootID).To(Equal(inside), "the daemon on %s reports the node's boot, not the host kernel's", n.Name())
		}, timeout, time.Second).Should(Succeed())
	}

	kc := kmaintClient(g, c)
	diagnoseOnFailure(t, cs, kc)
	// run runs a subtest and logs where its reboots' time went.
	run := func(name string, f func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			logRequestTimes(t, kc, time.Now())
			f(t)
		})
	}
	run("a NodeMaintenance reboots its node", func(t *testing.T) { rebootThroughKmaint(t, c, kc) })
	run("root on the host asks with kmaint-daemon request-reboot", func(t *testing.T) { requestFromTheHost(t, c, kc) })
	run("a config rollout reboots every node once, one at a time, under a PodDisruptionBudget", func(t *testing.T) { rolloutOverEveryNode(t, c, kc) })
	run("a rollout with a settle time and a health check halts at the node that comes back unhealthy, and completes once resumed", func(t *testing.T) {
		rolloutHaltsAtAnUnhealthyNode(t, c, kc, prom)
	})
	run("a reboot in a pool with silences pages no one, one in a pool without does, and the silence ends with the node's maintenance", func(t *testing.T) {
		aSilencedRebootPagesNoOne(t, c, kc, alerts)
	})
	run("a metric policy reboots the node whose series stays past its threshold", func(t *testing.T) { metricPolicyReboots(t, c, kc, prom) })
	run("a schedule policy reboots its nodes when it fires", func(t *testing.T) { schedulePolicyReboots(t, c, kc) })
	run("the leading operator deleted mid-drain: the other replica completes the reboot, once", func(t *testing.T) { operatorDeletedMidDrain(t, c, kc) })
	run("the daemon pod deleted right after approval: the node reboots once", func(t *testing.T) { daemonDeletedAfterApproval(t, c, kc) })
	run("only the gate approves: a user who may patch Nodes is refused, and a bare approval does not reboot the node", func(t *testing.T) {
		approvalsOnlyFromTheGate(t, c, kc)
	})
	run("a config rollout stages its config before each reboot and checks it after, runs each Job once through a leader's deletion, and halts at a failed check", func(t *testing.T) {
		hookedRollout(t, c, kc)
	})
	run("a gate another controller opens holds the drain until it acknowledges", func(t *testing.T) { aGateHoldsTheDrain(t, c, kc) })
	run("kmaint upgraded with helm mid-rollout, and downgraded back mid-rollout, CRDs first: every node rebooted once, one at a time, every object kept", func(t *testing.T) {
		kmaintUpgradedMidRollout(t, c, kc)
	})
	run("a node that does not come back is reported and holds its pool's rollout at the budget", func(t *testing.T) { nodeNotBackFromReboot(t, c, kc) })
}

func leaseHolder(l coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// daemonPodNodes lists the nodes the DaemonSet's Ready pods run on.
func daemonPodNodes(g Gomega, cs kubernetes.Interface, ds *appsv1.DaemonSet) []string {
	pods, err := cs.CoreV1().Pods(ds.Namespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(ds.Spec.Selector)})
	g.Expect(err).NotTo(HaveOccurred())
	var nodes []string
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				nodes = append(nodes, p.Spec.NodeName)
			}
		}
	}
	return nodes
}

func nodeNames(c *realcluster.Cluster) []string {
	var names []string
	for _, n := range c.Nodes() {
		names = append(names, n.Name())
	}
	return names
}
