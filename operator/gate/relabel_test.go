package gate_test

import (
	"context"
	"encoding/json"
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

// A node relabelled into another pool in the middle of its reboot stays
// with the pool that admitted it until its maintenance ends: it counts
// against that pool's budget alone, that pool finishes it, and the pool its
// labels name now neither counts it nor drives it. Both pools stay within
// their budgets, counted as the gate promises (countsAgainst).
func TestNodeRelabelledInFlightStaysWithThePoolThatAdmittedIt(t *testing.T) {
	g := NewWithT(t)
	createPool(t, gen.Pool("source", intstr.FromInt32(1)))
	createPool(t, gen.Pool("destination", intstr.FromInt32(1)))
	src := createNodes(t, "source", "source", 2, gen.Labels("relabel-test", "stays"))
	dst := createNodes(t, "destination", "destination", 1, gen.Labels("relabel-test", "stays"))[0]
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

	// The source waits for its moved node, and says so; the destination
	// admits its own node in its own slot.
	expectBlocked(g, "source", v1alpha1.BudgetExhaustedReason, "waiting: "+src[1], moved+" (labels: destination)")
	g.Eventually(func(g Gomega) map[string]string { return getNode(g, dst).Annotations }, timeout).Should(HaveKey(protocol.Admitted))
	g.Expect(getNode(g, moved).Annotations).To(HaveKeyWithValue(protocol.RebootApproved, "boot-0"), "still the source's, still approved")
	g.Expect(getNode(g, src[1]).Annotations).NotTo(HaveKey(protocol.Admitted))
	g.Eventually(func(g Gomega) {
		g.Expect(getPool(g, "source").Status.Unavailable).To(BeEquivalentTo(1))
		p := getPool(g, "destination")
		g.Expect(p.Status.Unavailable).To(BeEquivalentTo(1), "the destination counts its own node, not the moved one")
		g.Expect(meta.FindStatusCondition(p.Status.Conditions, v1alpha1.OverBudgetCondition)).To(HaveField("Status", metav1.ConditionFalse))
	}, timeout).Should(Succeed())
	// The move is told, once, on the node and the pool that keeps it.
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "Node", moved, "Warning") }, timeout).
		Should(ContainElement(v1alpha1.RelabelledInFlightReason))
	g.Expect(harness.EventReasons(g, bed, "MaintenancePool", "source", "Warning")).To(ContainElement(v1alpha1.RelabelledInFlightReason))

	daemons := harness.RunDaemonsOf(t, bed, client.MatchingLabels{"relabel-test": "stays"}, false)
	g.Eventually(func(g Gomega) {
		for _, n := range []string{moved, src[1], dst} {
			expectRebootedOnce(g, n, false)
		}
	}, 2*timeout).Should(Succeed())
	g.Expect(daemons.Order()).To(HaveLen(3))
	g.Expect(budgets.most()).To(Equal(map[string]int{"source": 1, "destination": 1}))
	g.Expect(countOf(harness.EventReasons(g, bed, "Node", moved, "Warning"), v1alpha1.RelabelledInFlightReason)).To(Equal(1), "told once")
	// Its maintenance over, the moved node is the destination's.
	g.Eventually(func(g Gomega) { g.Expect(getPool(g, "destination").Status.Nodes).To(BeEquivalentTo(2)) }, timeout).Should(Succeed())
	g.Expect(getPool(g, "source").Status.Nodes).To(BeEquivalentTo(1))
}

// A node relabelled in flight into a pool whose budget is used up takes no
// slot there: that pool is never over its budget, and admits its next node
// when its own frees, whatever the moved node is doing.
func TestNodeRelabelledIntoAFullPoolTakesNoSlotThere(t *testing.T) {
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

	budgets := watchPoolBudgets(t, map[string]int{"mover": 1, "full": 1})
	relabel(g, moved, "full")
	request(t, full[1], "f1", time.Now())
	expectBlocked(g, "full", v1alpha1.BudgetExhaustedReason, "waiting: "+full[1])
	g.Eventually(func(g Gomega) {
		p := getPool(g, "full")
		g.Expect(p.Status.Unavailable).To(BeEquivalentTo(1))
		g.Expect(meta.FindStatusCondition(p.Status.Conditions, v1alpha1.OverBudgetCondition)).To(HaveField("Reason", v1alpha1.WithinBudgetReason))
	}, timeout).Should(Succeed())

	// The full pool's own node done, its next goes while the moved node is
	// still in flight in its own pool.
	runDaemons(t, "full", false) // the moved node is labelled full now: its reboot too
	g.Eventually(func(g Gomega) {
		for _, n := range append([]string{moved}, full...) {
			expectRebootedOnce(g, n, false)
		}
	}, 2*timeout).Should(Succeed())
	g.Expect(budgets.most()).To(Equal(map[string]int{"mover": 1, "full": 1}))
}

// relabel moves a node to another pool, as a person with kubectl label would.
func relabel(g Gomega, node, pool string) {
	editNode(g, node, func(n *corev1.Node) { n.Labels["pool"] = pool })
}

// unlabel takes a node out of every pool, into the built-in default pool.
func unlabel(g Gomega, node string) {
	editNode(g, node, func(n *corev1.Node) { delete(n.Labels, "pool") })
}

// poolBudgets watches every node and fails the test the moment a pool has
// more nodes counting against it than its limit (countsAgainst).
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

// countsAgainst is the test's own reading of the budget rule: an
// unavailable node counts against the pool that admitted it (its admission
// or, once back, its settle record names it) until its maintenance ends,
// and otherwise against the pool its label names.
func countsAgainst(n *corev1.Node, pool string) bool {
	if !harness.Unavailable(n) {
		return false
	}
	for _, key := range []string{protocol.Admitted, protocol.Settling} {
		var rec struct {
			Pool string `json:"pool"`
		}
		if raw, ok := n.Annotations[key]; ok && json.Unmarshal([]byte(raw), &rec) == nil && rec.Pool != "" {
			return rec.Pool == pool
		}
	}
	return n.Labels["pool"] == pool
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

// A pool deleted while a node it admitted is in flight keeps nothing: the
// node goes to the pool its labels name, which finishes it, once. A pool
// made again under the deleted one's name is another pool: it takes no
// node the first admitted.
func TestANodeWhosePoolIsDeletedInFlightGoesWhereItsLabelsSay(t *testing.T) {
	g := NewWithT(t)
	doomed := gen.Pool("doomed", intstr.FromInt32(1))
	createPool(t, doomed)
	createPool(t, gen.Pool("heir", intstr.FromInt32(1)))
	node := createNodes(t, "doomed", "doomed", 1, gen.Labels("relabel-test", "doomed"))[0]
	startOperator(t)
	request(t, node, "d", time.Now())
	g.Eventually(func(g Gomega) map[string]string { return getNode(g, node).Annotations }, timeout).
		Should(HaveKeyWithValue(protocol.RebootApproved, "boot-0"))
	relabel(g, node, "heir")
	g.Expect(bed.Client.Delete(context.Background(), getPool(g, "doomed"))).To(Succeed())
	// Made again, under the same name, selecting the node's new label.
	again := gen.Pool("doomed", intstr.FromInt32(1))
	again.Spec.NodeSelector.MatchLabels = map[string]v1alpha1.SelectorValue{"pool": "heir", "never": "matches"}
	g.Eventually(func() error { return bed.Client.Create(context.Background(), again.DeepCopy()) }, timeout).Should(Succeed())

	g.Eventually(func(g Gomega) { g.Expect(getPool(g, "heir").Status.Unavailable).To(BeEquivalentTo(1)) }, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getPool(g, "heir").Status.Unavailable).To(BeEquivalentTo(1))
		g.Expect(getPool(g, "doomed").Status.Unavailable).To(BeZero(), "the pool made again took the node")
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
	daemons := harness.RunDaemonsOf(t, bed, client.MatchingLabels{"relabel-test": "doomed"}, false)
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, node, false) }, timeout).Should(Succeed())
	g.Expect(daemons.Count(node)).To(Equal(1))
}
