package gate_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/operator/gate"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

func podExists(g Gomega, ns, name string) bool {
	err := bed.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &corev1.Pod{})
	if apierrors.IsNotFound(err) {
		return false
	}
	g.Expect(err).NotTo(HaveOccurred())
	return true
}

func setPDBAllowed(g Gomega, ns, name string, allowed int32) {
	pdb := &policyv1.PodDisruptionBudget{}
	g.Expect(bed.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, pdb)).To(Succeed())
	pdb.Status.DisruptionsAllowed = allowed
	pdb.Status.CurrentHealthy = 1 + allowed
	pdb.Status.ExpectedPods = 1 + allowed
	g.Expect(bed.Client.Status().Update(context.Background(), pdb)).To(Succeed())
}

func TestDrainEvictsPodsAndWaitsForThemToGo(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	harness.CreateNamespace(t, bed, "drain-ok")
	createPool(t, gen.Pool("drain-ok", intstr.FromInt32(1)))
	node := createNodes(t, "drain-ok", "drain-ok", 1)[0]
	other := createNodes(t, "drain-ok-other", "elsewhere", 1)[0]
	for _, name := range []string{"web-0", "web-1", "batch-0"} {
		g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod("drain-ok", name, node, map[string]string{"app": name}))).To(Succeed())
	}
	g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod("drain-ok", "untouched", other, nil))).To(Succeed())
	// A PodDisruptionBudget that allows one disruption lets its pod go.
	g.Expect(gen.PDB(ctx, bed.Client, "drain-ok", "web-0", map[string]string{"app": "web-0"}, 1)).To(Succeed())
	runDaemons(t, "drain-ok", false)
	startOperator(t)

	request(t, node, "d", time.Now())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, node, false) }, timeout).Should(Succeed())
	for _, name := range []string{"web-0", "web-1", "batch-0"} {
		g.Expect(podExists(g, "drain-ok", name)).To(BeFalse(), "pod %s evicted before the reboot", name)
	}
	g.Expect(podExists(g, "drain-ok", "untouched")).To(BeTrue(), "pods on other nodes stay")
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "Node", node, "") }, timeout).
		Should(ContainElements("Admitted", "RebootCompleted"))
	// The approval of a drain that finished is not told: the daemon's
	// Rebooting (these are the harness's fake daemons) says the same.
	g.Expect(harness.EventReasons(g, bed, "Node", node, "")).NotTo(ContainElement("RebootApproved"))
	// A reboot's routine steps are told on the node only: on the pool,
	// thousands of them would bury what concerns the pool.
	g.Expect(harness.EventReasons(g, bed, "MaintenancePool", "drain-ok", "")).
		NotTo(ContainElement(BeElementOf("Admitted", "RebootApproved", "RebootCompleted")))
}

func TestPDBKeepsNodeDrainingThenTimeoutReleasesIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	harness.CreateNamespace(t, bed, "drain-pdb")
	pool := gen.Pool("drain-pdb", intstr.FromInt32(1))
	pool.Spec.Drain.Timeout = &metav1.Duration{Duration: 4 * time.Second}
	pool.Spec.Drain.OnTimeout = v1alpha1.DrainAbandonAction
	createPool(t, pool)
	node := createNodes(t, "drain-pdb", "drain-pdb", 1)[0]
	g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod("drain-pdb", "db-0", node, map[string]string{"app": "db"}))).To(Succeed())
	g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod("drain-pdb", "free-0", node, map[string]string{"app": "free"}))).To(Succeed())
	g.Expect(gen.PDB(ctx, bed.Client, "drain-pdb", "db", map[string]string{"app": "db"}, 0)).To(Succeed())
	daemons := runDaemons(t, "drain-pdb", false)
	startOperator(t)

	request(t, node, "blocked", time.Now())
	// While the budget forbids eviction the node stays cordoned and draining,
	// and the pool says which pod and why.
	g.Eventually(func(g Gomega) {
		n := getNode(g, node)
		g.Expect(n.Annotations).To(HaveKey(protocol.Admitted))
		g.Expect(n.Spec.Unschedulable).To(BeTrue())
		c := meta.FindStatusCondition(getPool(g, "drain-pdb").Status.Conditions, v1alpha1.DrainingCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal("DrainBlocked"))
		g.Expect(c.Message).To(ContainSubstring("drain-pdb/db-0"))
		g.Expect(c.Message).To(ContainSubstring("disruption budget"))
	}, timeout).Should(Succeed())
	g.Expect(podExists(g, "drain-pdb", "db-0")).To(BeTrue())
	g.Eventually(func(g Gomega) bool { return podExists(g, "drain-pdb", "free-0") }, timeout).Should(BeFalse())
	g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.RebootApproved))

	// On timeout the drain is abandoned: the node is uncordoned and says why,
	// the pool reports it, a Warning event is recorded, nothing reboots.
	g.Eventually(func(g Gomega) {
		n := getNode(g, node)
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.Admitted))
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.Cordoned))
		g.Expect(n.Spec.Unschedulable).To(BeFalse())
		g.Expect(n.Annotations[protocol.DrainFailed]).To(ContainSubstring("DrainTimeout"))
		g.Expect(n.Annotations[protocol.DrainFailed]).To(ContainSubstring("drain-pdb/db-0"))
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		p := getPool(g, "drain-pdb")
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.DegradedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(BeEquivalentTo("True"))
		g.Expect(c.Message).To(ContainSubstring("did not finish within 4s"))
		g.Expect(p.Status.Degraded).To(BeEquivalentTo(1))
		g.Expect(p.Status.PendingRequests).To(BeEquivalentTo(0), "the failed request is not retried")
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "Node", node, "") }, timeout).Should(ContainElement("DrainFailed"))
	g.Expect(daemons.Count(node)).To(Equal(0))
	// The request's NodeMaintenance says it failed, and why.
	g.Eventually(func(g Gomega) {
		var phases []string
		for _, nm := range harness.MaintenancesOf(g, bed, node) {
			phases = append(phases, string(nm.Status.Phase)+": "+nm.Status.Message)
		}
		g.Expect(phases).To(ConsistOf(And(HavePrefix("Failed: "), ContainSubstring("drain-pdb/db-0"))))
	}, timeout).Should(Succeed())

	// A new request, once the budget allows it, drains and reboots the node.
	setPDBAllowed(g, "drain-pdb", "db", 1)
	request(t, node, "retry", time.Now())
	g.Eventually(func(g Gomega) {
		expectRebootedOnce(g, node, false)
		g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.DrainFailed))
	}, timeout).Should(Succeed())
	g.Expect(podExists(g, "drain-pdb", "db-0")).To(BeFalse())
}

func TestApprovalIsBoundToTheBootItWasRequestedIn(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createPool(t, gen.Pool("boot", intstr.FromInt32(1)))
	node := createNodes(t, "boot", "boot", 1)[0]
	startOperator(t)

	request(t, node, "first", time.Now())
	g.Eventually(func(g Gomega) {
		g.Expect(getNode(g, node).Annotations).To(HaveKeyWithValue(protocol.RebootApproved, "boot-0"))
	}, timeout).Should(Succeed())

	// The node goes NotReady and comes back Ready with the same boot ID: it
	// did not reboot, so the reboot is not complete.
	n := getNode(g, node)
	gen.SetReady(n, false)
	g.Expect(bed.Client.Status().Update(ctx, n)).To(Succeed())
	gen.SetReady(n, true)
	g.Expect(bed.Client.Status().Update(ctx, n)).To(Succeed())
	g.Eventually(func(g Gomega) {
		p := getPool(g, "boot")
		g.Expect(p.Status.Rebooting).To(BeEquivalentTo(1))
		g.Expect(p.Status.Ready).To(BeEquivalentTo(1))
	}, timeout).Should(Succeed())
	n = getNode(g, node)
	g.Expect(n.Annotations).To(HaveKeyWithValue(protocol.RebootApproved, "boot-0"))
	g.Expect(n.Spec.Unschedulable).To(BeTrue())

	// A real reboot: new boot ID, request cleared. Done.
	g.Expect(gen.Reboot(ctx, bed.Client, node, "boot-1", true)).To(Succeed())
	g.Eventually(func(g Gomega) { expectSettled(g, node, false) }, timeout).Should(Succeed())

	// A request in the new boot gets an approval naming the new boot, never
	// the old one.
	request(t, node, "second", time.Now())
	g.Eventually(func(g Gomega) {
		g.Expect(getNode(g, node).Annotations).To(HaveKeyWithValue(protocol.RebootApproved, "boot-1"))
	}, timeout).Should(Succeed())
}

func TestOperatorRestartMidDrainLosesAndLeaksNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	harness.CreateNamespace(t, bed, "restart")
	createPool(t, gen.Pool("restart", intstr.FromInt32(1)))
	nodes := createNodes(t, "restart", "restart", 3)
	g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod("restart", "db-0", nodes[0], map[string]string{"app": "db"}))).To(Succeed())
	g.Expect(gen.PDB(ctx, bed.Client, "restart", "db", map[string]string{"app": "db"}, 0)).To(Succeed())
	budget := watchBudget(t, "restart")
	daemons := runDaemons(t, "restart", false)
	stop := startOperator(t)

	t0 := time.Now()
	for i, n := range nodes {
		request(t, n, "r"+n, t0.Add(time.Duration(i)*time.Second))
	}
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPool(g, "restart").Status.Conditions, v1alpha1.DrainingCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal("DrainBlocked"))
	}, timeout).Should(Succeed())

	// Kill the operator mid-drain; the node stays admitted and cordoned, as
	// the API server records it, and nobody else is admitted meanwhile.
	stop()
	setPDBAllowed(g, "restart", "db", 1)
	startOperator(t)

	for _, n := range nodes {
		g.Eventually(func(g Gomega) { expectRebootedOnce(g, n, false) }, timeout).Should(Succeed())
		g.Expect(daemons.Count(n)).To(Equal(1))
	}
	most, _ := budget.MostUnavailable()
	g.Expect(most).To(Equal(1))
}

// Malformed annotations never lead to an admission and are reported.
func TestMalformedRequestIsReportedNotAdmitted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createPool(t, gen.Pool("malformed", intstr.FromInt32(1)))
	node := createNodes(t, "malformed", "malformed", 1)[0]
	startOperator(t)

	n := getNode(g, node)
	base := n.DeepCopy()
	n.Annotations = map[string]string{protocol.RebootRequested: "{not json"}
	g.Expect(bed.Client.Patch(ctx, n, client.MergeFrom(base))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPool(g, "malformed").Status.Conditions, v1alpha1.DegradedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal("MalformedAnnotation"))
		g.Expect(c.Message).To(ContainSubstring(protocol.RebootRequested))
		g.Expect(c.Message).To(ContainSubstring(node))
	}, timeout).Should(Succeed())
	g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.Admitted))
}

// A node back from its reboot is not completed while one of its annotations
// cannot be read: it stays cordoned and approved, the pool and the node say
// why (once), and it completes as soon as the annotation can be read.
func TestUnreadableNodeIsNeverCompleted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createPool(t, gen.Pool("unreadable", intstr.FromInt32(1)))
	node := createNodes(t, "unreadable", "unreadable", 1)[0]

	// Rebooted: a new boot, Ready, approved for the old one, cordoned by
	// kmaint, and a daemon state nobody can read.
	n := getNode(g, node)
	base := n.DeepCopy()
	n.Spec.Unschedulable = true
	n.Annotations = map[string]string{
		protocol.Admitted:       protocol.Encode(protocol.Admission{BootID: "boot-old", Time: time.Now()}),
		protocol.RebootApproved: "boot-old",
		protocol.Cordoned:       "true",
		protocol.State:          `{"phase":`,
	}
	g.Expect(bed.Client.Patch(ctx, n, client.MergeFrom(base))).To(Succeed())
	startOperator(t)

	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPool(g, "unreadable").Status.Conditions, v1alpha1.DegradedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(v1alpha1.MalformedAnnotationReason))
		g.Expect(c.Message).To(ContainSubstring(protocol.State))
		g.Expect(harness.EventReasons(g, bed, "MaintenancePool", "unreadable", "Warning")).To(ConsistOf(v1alpha1.MalformedAnnotationReason), "one Warning event, not one per reconcile")
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		n := getNode(g, node)
		g.Expect(n.Spec.Unschedulable).To(BeTrue(), "not uncordoned")
		g.Expect(n.Annotations).To(HaveKeyWithValue(protocol.RebootApproved, "boot-old"), "not completed")
	}, 3*time.Second).Should(Succeed())
	g.Expect(harness.EventReasons(g, bed, "MaintenancePool", "unreadable", "Warning")).To(HaveLen(1), "still one Warning event")

	n = getNode(g, node)
	base = n.DeepCopy()
	gen.DaemonState(protocol.DaemonIdle, protocol.BootID(n), "", time.Now())(n)
	g.Expect(bed.Client.Patch(ctx, n, client.MergeFrom(base))).To(Succeed())
	g.Eventually(func(g Gomega) {
		n := getNode(g, node)
		g.Expect(n.Spec.Unschedulable).To(BeFalse(), "uncordoned once readable")
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.RebootApproved))
	}, timeout).Should(Succeed())
}

// hangingDrainer is the real drainer, except that the steps of one node
// hang until the test lets them go, as they do against an API server that
// stopped answering.
type hangingDrainer struct {
	gate.Drainer
	node    string
	release chan struct{}
}

func (h *hangingDrainer) Step(ctx context.Context, node string, opts v1alpha1.DrainOptions, pods *drain.NodePods) (drain.Progress, error) {
	if node == h.node {
		select {
		case <-h.release:
		case <-ctx.Done():
			return drain.Progress{}, ctx.Err()
		}
	}
	return h.Drainer.Step(ctx, node, opts, pods)
}

func TestADrainThatHangsHoldsUpNoOtherNode(t *testing.T) {
	g := NewWithT(t)
	createPool(t, gen.Pool("hang", intstr.FromInt32(2)))
	nodes := createNodes(t, "hang", "hang", 3)
	stuck, quick, later := nodes[0], nodes[1], nodes[2]
	watchBudget(t, "hang").FailAbove(2)
	daemons := runDaemons(t, "hang", false)
	h := &hangingDrainer{Drainer: &drain.Drainer{Client: kubernetes.NewForConfigOrDie(bed.Config)}, node: stuck, release: make(chan struct{})}
	defer func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
	}()
	startGate(t, gateOptions{drainer: h})

	request(t, stuck, "hang-0", time.Now())
	request(t, quick, "hang-1", time.Now())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, quick, false) }, timeout).Should(Succeed())
	// The slot quick freed goes to the next request while stuck's drain
	// step still hangs: a reconcile of the pool does not wait for it.
	request(t, later, "hang-2", time.Now())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, later, false) }, timeout).Should(Succeed())
	g.Expect(getNode(g, stuck).Annotations).To(HaveKey(protocol.Admitted))
	g.Expect(daemons.Count(stuck)).To(Equal(0))

	close(h.release)
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, stuck, false) }, timeout).Should(Succeed())
}
