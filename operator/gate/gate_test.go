package gate_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

const timeout = 30 * time.Second

func request(t *testing.T, node, id string, at time.Time) {
	t.Helper()
	if err := gen.Request(context.Background(), bed.Client, node, id, v1alpha1.SourceHost, at); err != nil {
		t.Fatal(err)
	}
}

func TestTenNodesNeverMoreThanThreeUnavailable(t *testing.T) {
	g := NewWithT(t)
	createPool(t, gen.Pool("ten", intstr.FromInt32(3)))
	nodes := createNodes(t, "ten", "ten", 10)
	budget := watchBudget(t, "ten")
	daemons := runDaemons(t, "ten", false)
	startOperator(t)

	start := time.Now()
	for i, n := range nodes {
		request(t, n, fmt.Sprintf("req-%d", i), start.Add(time.Duration(i)*time.Second))
	}
	for _, n := range nodes {
		g.Eventually(func(g Gomega) { expectSettled(g, n, false) }, timeout).Should(Succeed())
		g.Expect(getNode(g, n).Status.NodeInfo.BootID).To(Equal("boot-0-r1"), "node %s rebooted once", n)
	}
	most, moments := budget.MostUnavailable()
	t.Logf("most unavailable at once: %d over %d observed changes", most, moments)
	g.Expect(most).To(Equal(3), "the budget is used and never exceeded")
	for _, n := range nodes {
		g.Expect(daemons.Count(n)).To(Equal(1), "node %s reboots exactly once", n)
	}
	g.Eventually(func(g Gomega) {
		p := getPool(g, "ten")
		g.Expect(p.Status.Nodes).To(BeEquivalentTo(10))
		g.Expect(p.Status.Unavailable).To(BeEquivalentTo(0))
		g.Expect(p.Status.PendingRequests).To(BeEquivalentTo(0))
	}, timeout).Should(Succeed())
}

func TestPercentBudgetCountsNotReadyAndPersonCordonedNodes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// 50% of 4 nodes: 2 may be unavailable.
	createPool(t, gen.Pool("pct", intstr.FromString("50%")))
	nodes := createNodes(t, "pct", "pct", 2)
	sick := createNodes(t, "pct-sick", "pct", 1, gen.NotReady())[0]
	cordoned := createNodes(t, "pct-cordoned", "pct", 1, gen.Unschedulable())[0]
	runDaemons(t, "pct", false)
	startOperator(t)

	request(t, nodes[0], "a", time.Now())
	g.Eventually(func(g Gomega) {
		p := getPool(g, "pct")
		g.Expect(p.Status.MaxUnavailable).To(BeEquivalentTo(2))
		g.Expect(p.Status.Unavailable).To(BeEquivalentTo(2))
		g.Expect(p.Status.PendingRequests).To(BeEquivalentTo(1))
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.BlockedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal("BudgetExhausted"))
		g.Expect(c.Message).To(ContainSubstring(nodes[0]))
	}, timeout).Should(Succeed())
	g.Expect(getNode(g, nodes[0]).Annotations).NotTo(HaveKey(protocol.Admitted))

	// The sick node recovers: its slot goes to the waiting node.
	n := getNode(g, sick)
	gen.SetReady(n, true)
	g.Expect(bed.Client.Status().Update(ctx, n)).To(Succeed())
	g.Eventually(func(g Gomega) { expectSettled(g, nodes[0], false) }, timeout).Should(Succeed())
	g.Expect(getNode(g, nodes[0]).Status.NodeInfo.BootID).To(Equal("boot-0-r1"))

	// The node a person cordoned may reboot (it costs no extra budget), and
	// kmaint leaves it cordoned afterwards.
	request(t, cordoned, "c", time.Now())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, cordoned, true) }, timeout).Should(Succeed())
}

// An admission and its approval record the view of Nodes the gate counted
// the pool from: one that holds the change that made room for it.
func TestAnAdmissionRecordsTheViewOfNodesItCountedFrom(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createPool(t, gen.Pool("viewed", intstr.FromInt32(1)))
	node := createNodes(t, "viewed", "viewed", 1)[0]
	sick := createNodes(t, "viewed-sick", "viewed", 1, gen.NotReady())[0]
	startOperator(t)

	request(t, node, "v", time.Now())
	g.Eventually(func(g Gomega) int32 { return getPool(g, "viewed").Status.PendingRequests }, timeout).Should(BeEquivalentTo(1))
	g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.Admitted))
	wc, err := client.NewWithWatch(bed.Config, client.Options{Scheme: bed.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	w, err := wc.Watch(wctx, &corev1.NodeList{}, client.MatchingFields{"metadata.name": node})
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	n := getNode(g, sick)
	gen.SetReady(n, true)
	g.Expect(bed.Client.Status().Update(ctx, n)).To(Succeed())
	recovered, err := strconv.ParseUint(n.ResourceVersion, 10, 64)
	g.Expect(err).NotTo(HaveOccurred())

	// Each write as it came: the approval rewrites the admission, so the
	// admission's own view is seen only in its own version.
	views := map[string]string{} // "admitted", "approved": the view each wrote
	for ev := range w.ResultChan() {
		nd, ok := ev.Object.(*corev1.Node)
		if !ok {
			continue
		}
		st, err := protocol.Read(nd)
		g.Expect(err).NotTo(HaveOccurred())
		if st.Admission == nil {
			continue
		}
		what := "admitted"
		if st.Approved != "" {
			what = "approved"
		}
		if _, seen := views[what]; !seen {
			views[what] = st.Admission.View
		}
		if what == "approved" {
			break
		}
	}
	g.Expect(views).To(HaveKey("admitted"), "the admission's own version was seen")
	for _, what := range []string{"admitted", "approved"} {
		v, err := strconv.ParseUint(views[what], 10, 64)
		g.Expect(err).NotTo(HaveOccurred(), "the view %s: %q", what, views[what])
		g.Expect(v).To(BeNumerically(">=", recovered), "%s once the sick node's recovery was seen", what)
	}
}

func TestPausedPoolAdmitsNothingUntilResumed(t *testing.T) {
	g := NewWithT(t)
	pool := gen.Pool("paused", intstr.FromInt32(1))
	pool.Spec.Paused = true
	createPool(t, pool)
	node := createNodes(t, "paused", "paused", 1)[0]
	runDaemons(t, "paused", false)
	startOperator(t)

	request(t, node, "p", time.Now())
	g.Eventually(func(g Gomega) {
		p := getPool(g, "paused")
		g.Expect(p.Status.PendingRequests).To(BeEquivalentTo(1))
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.BlockedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal("Paused"))
	}, timeout).Should(Succeed())
	// The status above is written by the same reconcile that decided not to
	// admit, so the node is known to be waiting, not merely not yet admitted.
	n := getNode(g, node)
	g.Expect(n.Annotations).NotTo(HaveKey(protocol.Admitted))
	g.Expect(n.Spec.Unschedulable).To(BeFalse())

	harness.PatchPool(g, bed, "paused", func(p *v1alpha1.MaintenancePool) { p.Spec.Paused = false })
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, node, false) }, timeout).Should(Succeed())
}

func TestAdmissionFollowsRequestOrder(t *testing.T) {
	g := NewWithT(t)
	createPool(t, gen.Pool("order", intstr.FromInt32(1)))
	nodes := createNodes(t, "order", "order", 4)
	daemons := runDaemons(t, "order", true)
	// Requests are made before the operator starts, so it sees all four at
	// once and must order them by request time, not by name or arrival.
	// They were made in the past: a time to come counts as now.
	t0 := time.Now().Add(-time.Minute)
	request(t, nodes[0], "o0", t0.Add(3*time.Second))
	request(t, nodes[1], "o1", t0.Add(1*time.Second))
	request(t, nodes[2], "o2", t0.Add(4*time.Second))
	request(t, nodes[3], "o3", t0.Add(2*time.Second))
	startOperator(t)

	g.Eventually(daemons.Order, timeout).Should(HaveLen(4))
	g.Expect(daemons.Order()).To(Equal([]string{nodes[1], nodes[3], nodes[0], nodes[2]}))
}

// A node's daemon token may write any time and any request id on its own
// Node. The forger names a request from the API that is no NodeMaintenance
// of its own (another node's id, read from that node's api-requests), dated
// 1970; before, it went first at every turn. A request counts from when
// kmaint saw it, so the node that asked first goes first.
func TestForgedRequestTimesDoNotJumpTheQueue(t *testing.T) {
	g := NewWithT(t)
	pool := gen.Pool("forged-order", intstr.FromInt32(1))
	pool.Spec.Paused = true
	createPool(t, pool)
	nodes := createNodes(t, "forged-order", "forged-order", 2)
	honest, forger := nodes[0], nodes[1]
	daemons := runDaemons(t, "forged-order", true)
	startOperator(t)

	request(t, honest, "honest-1", time.Now())
	g.Eventually(func(g Gomega) {
		g.Expect(harness.MaintenancesOf(g, bed, honest)).To(HaveLen(1), "the honest request recorded")
	}, timeout).Should(Succeed())
	g.Expect(gen.Request(context.Background(), bed.Client, forger, "uid-of-another-nodes-request", v1alpha1.SourceAPI, time.Unix(0, 0))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getPool(g, pool.Name).Status.PendingRequests).To(BeEquivalentTo(2), "both nodes wait")
	}, timeout).Should(Succeed())

	harness.PatchPool(g, bed, pool.Name, func(p *v1alpha1.MaintenancePool) { p.Spec.Paused = false })
	g.Eventually(daemons.Order, timeout).Should(HaveLen(2))
	g.Expect(daemons.Order()).To(Equal([]string{honest, forger}), "the node that asked first goes first")
}

func TestNodeInTwoPoolsIsReportedAndNeverAdmitted(t *testing.T) {
	g := NewWithT(t)
	createPool(t, gen.Pool("left", intstr.FromInt32(1)))
	right := gen.Pool("right", intstr.FromInt32(1))
	right.Spec.NodeSelector.MatchLabels = map[string]v1alpha1.SelectorValue{"side": "right"}
	createPool(t, right)
	node := createNodes(t, "both", "left", 1, gen.Labels("side", "right"))[0]
	startOperator(t)
	request(t, node, "b", time.Now())

	for _, name := range []string{"left", "right"} {
		g.Eventually(func(g Gomega) {
			p := getPool(g, name)
			g.Expect(p.Status.Conflicting).To(BeEquivalentTo(1))
			c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConflictingCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(BeEquivalentTo("True"))
			g.Expect(c.Message).To(ContainSubstring(node))
		}, timeout).Should(Succeed())
	}
	g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.Admitted))
}

func TestDefaultPoolAdmitsOneAtATime(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// Nodes without a pool label fall into the built-in default pool.
	var nodes []string
	for i := range 3 {
		name := fmt.Sprintf("lonely-%d", i)
		g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(name, gen.Labels("lonely", "yes")))).To(Succeed())
		nodes = append(nodes, name)
	}
	startOperator(t)
	for i, n := range nodes {
		request(t, n, fmt.Sprintf("l%d", i), time.Now().Add(time.Duration(i)*time.Second))
	}
	g.Eventually(func(g Gomega) {
		admitted := 0
		for _, n := range nodes {
			if _, ok := getNode(g, n).Annotations[protocol.Admitted]; ok {
				admitted++
			}
		}
		g.Expect(admitted).To(Equal(1))
	}, timeout).Should(Succeed())
	// Approve nothing further: nobody reboots, so the other two keep waiting.
	n := getNode(g, nodes[0])
	g.Expect(n.Annotations).To(HaveKey(protocol.Admitted), "the oldest request goes first")
	g.Eventually(func(g Gomega) {
		g.Expect(getNode(g, nodes[0]).Annotations).To(HaveKeyWithValue(protocol.RebootApproved, "boot-0"))
	}, timeout).Should(Succeed())
	for _, other := range nodes[1:] {
		g.Expect(getNode(g, other).Annotations).NotTo(HaveKey(protocol.Admitted))
	}
	// Clean up: the nodes leave the default pool for good.
	for _, name := range nodes {
		g.Expect(bed.Client.Delete(ctx, getNode(g, name))).To(Succeed())
	}
}

func TestDesiredConfigIsWrittenToThePoolsNodes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pool := gen.Pool("cfg", intstr.FromInt32(1))
	pool.Spec.DesiredConfig = "os-1.2.3"
	createPool(t, pool)
	nodes := createNodes(t, "cfg", "cfg", 2)
	startOperator(t)
	for _, n := range nodes {
		g.Eventually(func(g Gomega) {
			g.Expect(getNode(g, n).Annotations).To(HaveKeyWithValue(protocol.DesiredConfig, "os-1.2.3"))
		}, timeout).Should(Succeed())
	}
	// One node already runs it, as its daemon reports.
	n := getNode(g, nodes[0])
	base := n.DeepCopy()
	metav1.SetMetaDataAnnotation(&n.ObjectMeta, protocol.CurrentConfig, "os-1.2.3")
	g.Expect(bed.Client.Patch(ctx, n, client.MergeFrom(base))).To(Succeed())
	g.Eventually(func(g Gomega) {
		p := getPool(g, "cfg")
		g.Expect(p.Status.Nodes).To(BeEquivalentTo(2))
		g.Expect(p.Status.Updated).To(BeEquivalentTo(1))
	}, timeout).Should(Succeed())
}
