package gate_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// A node relabelled into another pool in the middle of its reboot counts
// against both pools until its reboot completes: the pool that admitted it
// admits no one in its place, and the pool it moved to admits no one past
// its budget. The pool it moved to finishes it.
func TestNodeRelabelledInFlightCountsInBothPools(t *testing.T) {
	g := NewWithT(t)
	createPool(t, gen.Pool("source", intstr.FromInt32(1)))
	createPool(t, gen.Pool("destination", intstr.FromInt32(1)))
	src := createNodes(t, "source", "source", 2)
	dst := createNodes(t, "destination", "destination", 1)[0]
	moved := src[0]
	startOperator(t)

	// No daemon yet: the approved node stays in flight.
	request(t, moved, "m", time.Now())
	g.Eventually(func(g Gomega) map[string]string { return getNode(g, moved).Annotations }, timeout).
		Should(HaveKeyWithValue(protocol.RebootApproved, "boot-0"))
	g.Expect(getNode(g, moved).Annotations[protocol.Admitted]).To(ContainSubstring(`"pool":"source"`))

	budgets := watchPoolBudgets(t, map[string]int{"source": 1, "destination": 1})
	relabel(g, moved, "destination")
	request(t, src[1], "s", time.Now())
	request(t, dst, "d", time.Now())

	// Both pools wait, and say for whom: the status is written by the
	// reconcile that decided not to admit.
	expectBlocked(g, "source", v1alpha1.BudgetExhaustedReason, "waiting: "+src[1], moved+" (in destination)")
	expectBlocked(g, "destination", v1alpha1.BudgetExhaustedReason, "waiting: "+dst)
	for _, pool := range []string{"source", "destination"} {
		p := getPool(g, pool)
		g.Expect(p.Status.Unavailable).To(BeEquivalentTo(1), "pool %s counts the moved node", pool)
		g.Expect(meta.FindStatusCondition(p.Status.Conditions, v1alpha1.OverBudgetCondition)).To(HaveField("Status", metav1.ConditionFalse))
	}
	g.Expect(getNode(g, src[1]).Annotations).NotTo(HaveKey(protocol.Admitted))
	g.Expect(getNode(g, dst).Annotations).NotTo(HaveKey(protocol.Admitted))

	// The daemons reboot what is approved: the moved node first, then one
	// node of each pool, each pool within its budget all along.
	daemons := runDaemons(t, "destination", false)
	runDaemons(t, "source", false)
	g.Eventually(func(g Gomega) {
		for _, n := range []string{moved, src[1], dst} {
			expectRebootedOnce(g, n, false)
		}
	}, 2*timeout).Should(Succeed())
	g.Expect(daemons.Order()).To(HaveLen(2))
	g.Expect(daemons.Order()[0]).To(Equal(moved), "the moved node is done before the destination admits another")
	g.Expect(budgets.most()).To(Equal(map[string]int{"source": 1, "destination": 1}))
}

// A node relabelled in flight into a pool whose budget is used up puts that
// pool over budget; kmaint cannot prevent it, so it says so.
func TestNodeRelabelledIntoAFullPoolIsReported(t *testing.T) {
	g := NewWithT(t)
	createPool(t, gen.Pool("mover", intstr.FromInt32(1)))
	createPool(t, gen.Pool("full", intstr.FromInt32(1)))
	moved := createNodes(t, "mover", "mover", 1)[0]
	full := createNodes(t, "full", "full", 2)
	startOperator(t)
	request(t, moved, "m", time.Now())
	request(t, full[0], "f", time.Now())
	for _, n := range []string{moved, full[0]} {
		g.Eventually(func(g Gomega) map[string]string { return getNode(g, n).Annotations }, timeout).
			Should(HaveKeyWithValue(protocol.RebootApproved, "boot-0"))
	}

	relabel(g, moved, "full")
	request(t, full[1], "f1", time.Now())
	g.Eventually(func(g Gomega) {
		p := getPool(g, "full")
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.OverBudgetCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(v1alpha1.TooManyUnavailableReason))
		g.Expect(c.Message).To(ContainSubstring("2 nodes count against a maxUnavailable of 1"))
		g.Expect(c.Message).To(ContainSubstring(full[0] + " (rebooting)"))
		g.Expect(c.Message).To(ContainSubstring(moved + " (rebooting, admitted by pool mover)"))
		g.Expect(p.Status.PendingRequests).To(BeEquivalentTo(1))
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "MaintenancePool", "full", "Warning") }, timeout).
		Should(ContainElement(v1alpha1.OverBudgetCondition))
	g.Expect(getNode(g, full[1]).Annotations).NotTo(HaveKey(protocol.Admitted))

	// Once both are back, the pool is within its budget and takes its turn.
	runDaemons(t, "full", false)
	g.Eventually(func(g Gomega) {
		for _, n := range append([]string{moved}, full...) {
			expectRebootedOnce(g, n, false)
		}
		c := meta.FindStatusCondition(getPool(g, "full").Status.Conditions, v1alpha1.OverBudgetCondition)
		g.Expect(c).To(HaveField("Reason", v1alpha1.WithinBudgetReason))
	}, 2*timeout).Should(Succeed())
}

// relabel moves a node to another pool, as a person with kubectl label would.
func relabel(g Gomega, node, pool string) {
	n := getNode(g, node)
	base := n.DeepCopy()
	n.Labels["pool"] = pool
	g.Expect(bed.Client.Patch(context.Background(), n, client.MergeFrom(base))).To(Succeed())
}

// poolBudgets watches every node and fails the test the moment a pool has
// more nodes counting against it than its limit: its own unavailable nodes
// (by their pool label) and those it admitted that are labelled for another
// pool now, until their admission is gone.
type poolBudgets struct {
	mu     sync.Mutex
	nodes  map[string]*corev1.Node
	limits map[string]int
	high   map[string]int
}

func watchPoolBudgets(t *testing.T, limits map[string]int) *poolBudgets {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	wc, err := client.NewWithWatch(bed.Config, client.Options{Scheme: bed.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &corev1.NodeList{})
	if err != nil {
		t.Fatal(err)
	}
	pb := &poolBudgets{nodes: map[string]*corev1.Node{}, limits: limits, high: map[string]int{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			pb.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(pb.nodes, n.Name)
			} else {
				pb.nodes[n.Name] = n
			}
			for pool, limit := range pb.limits {
				var counted []string
				for _, n := range pb.nodes {
					if countsAgainst(n, pool) {
						counted = append(counted, n.Name)
					}
				}
				pb.high[pool] = max(pb.high[pool], len(counted))
				if len(counted) > limit {
					t.Errorf("pool %s over its budget of %d: %v", pool, limit, counted)
				}
			}
			pb.mu.Unlock()
		}
	}()
	return pb
}

// countsAgainst is the test's reading of the budget rule for nodes in flight.
func countsAgainst(n *corev1.Node, pool string) bool {
	if n.Labels["pool"] == pool {
		return harness.Unavailable(n)
	}
	var a protocol.Admission
	ok, err := protocol.Decode(n, protocol.Admitted, &a)
	return ok && err == nil && a.Pool == pool
}

// most returns, per pool, the most nodes that counted against it at once.
func (pb *poolBudgets) most() map[string]int {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	out := map[string]int{}
	for pool := range pb.limits {
		out[pool] = pb.high[pool]
	}
	return out
}
