package checker

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// The histories here are what the checker must catch or let pass. The
// helpers (history, node and its options) are in helpers_test.go; each
// hole the issue named has a test of its own in holes_test.go.

func TestAnAdmissionOverTheBudgetIsCaught(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p"), false)
	h.Node(node("b", "p"), false)
	h.after(time.Second).Node(node("a", "p", admitted("a1", "p", "r1")), false)
	g.Expect(h.Violations()).To(BeEmpty(), "one of a budget of one")
	h.after(time.Second).Node(node("b", "p", admitted("b1", "p", "r2")), false)
	g.Expect(invariants(h.Violations())).To(ContainElement(Budget), "two of a budget of one")
}

// A node down of its own counts against an admission made from a view of
// Nodes that held its change, however soon after it; one made from a view
// before it is excused, and counted as such.
func TestANodeDownOfItsOwnCountsOnceTheGatesViewHeldIt(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p"), false)
	h.Node(node("b", "p"), false)
	h.Node(node("c", "p"), false)
	// b goes NotReady a moment before a's admission, whose view is of the
	// version before: a race, not a fault of the gate's.
	h.after(time.Second).Node(node("b", "p", notReady), false)
	down := h.version()
	h.after(5*time.Second).Node(node("a", "p", admitted("a1", "p"), seeing(down-1)), false)
	g.Expect(h.Violations()).To(BeEmpty())
	g.Expect(h.Excused()).To(HaveKeyWithValue(ExcusedNodeDown, And(HaveField("Count", 1), HaveField("Seconds", BeNumerically("~", 5, 0.01)))))
	// c's admission comes a moment after a's slot is gone, from a view
	// that holds b's change: b counts.
	h.after(time.Second).Node(node("a", "p"), false)
	h.after(10*time.Millisecond).Node(node("c", "p", admitted("c1", "p"), seeing(down)), false)
	g.Expect(invariants(h.Violations())).To(Equal([]string{Budget}))
}

// An admission that records no view is held to every node down before it.
func TestAnAdmissionWithoutAViewCountsEveryNodeDownBeforeIt(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p"), false)
	h.Node(node("b", "p"), false)
	h.Node(node("b", "p", notReady), false)
	h.after(10*time.Millisecond).Node(node("a", "p", admitted("a1", "p")), false)
	g.Expect(invariants(h.Violations())).To(Equal([]string{Budget}))
}

func TestABudgetLoweredOrAPoolPausedHoldsOnceTheGateCanHaveSeenIt(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 2, false)
	h.Node(node("a", "p", admitted("a1", "p")), false)
	h.Node(node("b", "p"), false)
	h.Node(node("c", "p"), false)
	h.after(time.Minute).pool("p", 1, false)
	h.after(liveReadSpan/2).Node(node("b", "p", admitted("b1", "p")), false)
	g.Expect(h.Violations()).To(BeEmpty(), "lowered a moment before")
	g.Expect(h.Excused()).To(HaveKeyWithValue(ExcusedPoolChange, HaveField("Count", 1)))
	h.after(time.Minute).Node(node("a", "p"), false)
	h.Node(node("b", "p"), false)
	h.pool("p", 2, true)
	h.after(liveReadSpan).Node(node("c", "p", admitted("c1", "p")), false)
	g.Expect(invariants(h.Violations())).To(ConsistOf(Budget, Budget), "paused for the span: the admission and the count")
}

func TestANodeAdmittedByAnotherPoolCountsAgainstThatPool(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 1, false)
	h.pool("q", 1, false)
	// a was admitted by p, then relabelled into q: it holds p's slot.
	h.Node(node("a", "q", admitted("a1", "p")), false)
	h.Node(node("b", "q"), false)
	h.Node(node("c", "p"), false)
	h.after(time.Second).Node(node("b", "q", admitted("b1", "q")), false)
	g.Expect(h.Violations()).To(BeEmpty())
	h.after(time.Second).Node(node("c", "p", admitted("c1", "p")), false)
	g.Expect(invariants(h.Violations())).To(ConsistOf(Budget, Budget))
}

// A node back from its reboot and settling holds the slot of the pool that
// admitted it, which its settle record names, whatever its label says.
func TestANodeSettlingForAnotherPoolCountsAgainstThatPool(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 1, false)
	h.pool("q", 1, false)
	h.Node(node("a", "q", settling("p")), false)
	h.Node(node("b", "q"), false)
	h.Node(node("c", "p"), false)
	h.after(time.Second).Node(node("b", "q", admitted("b1", "q")), false)
	g.Expect(h.Violations()).To(BeEmpty(), "q's slot is free: a settles in p's")
	h.after(time.Second).Node(node("c", "p", admitted("c1", "p")), false)
	g.Expect(invariants(h.Violations())).To(ConsistOf(Budget, Budget))
}

func TestEveryDaemonRebootNeedsItsApprovalAndOneAsk(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p", admitted("a1", "p", "r1"), approved("a1")), false)
	h.Rebooted(Reboot{Node: "a", From: "a1", At: h.now, ByDaemon: true})
	h.Rebooted(Reboot{Node: "a", From: "x", At: h.now})
	h.Node(node("a", "p"), false)
	g.Expect(h.Final()).To(BeEmpty(), "approved, and one by hand")
	g.Expect(h.Checked()).To(And(HaveKeyWithValue(CheckedReboots, 1), HaveKeyWithValue(CheckedAsks, 1)))

	h = newHistory()
	h.Rebooted(Reboot{Node: "a", From: "a1", At: h.now, ByDaemon: true})
	g.Expect(invariants(h.Final())).To(Equal([]string{Approval}), "never approved")

	h = newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p", admitted("a1", "p"), approved("a1")), false)
	h.Rebooted(Reboot{Node: "a", From: "a1", At: h.now, ByDaemon: true, Again: true})
	g.Expect(invariants(h.Final())).To(ContainElement(Once), "asked twice")
}

func TestARequestRebootedInTwoBootsIsCaught(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p", admitted("a1", "p", "r1"), approved("a1")), false)
	h.Rebooted(Reboot{Node: "a", From: "a1", At: h.now, ByDaemon: true})
	h.after(time.Minute).Node(node("a", "p"), false)
	h.after(time.Minute).Node(node("a", "p", admitted("a2", "p", "r1", "r2"), approved("a2")), false)
	h.Rebooted(Reboot{Node: "a", From: "a2", At: h.now, ByDaemon: true})
	h.Node(node("a", "p"), false)
	g.Expect(invariants(h.Final())).To(Equal([]string{Once}))
}

func TestEveryRequestEndsAndEveryNodeIsBackInService(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p"), false)
	h.Requested(Request{Node: "a", Source: v1alpha1.SourceHost, Tag: "t1", At: h.now})
	h.Requested(Request{Node: "a", Source: v1alpha1.SourceAPI, Tag: "api-1", At: h.now})
	h.Requested(Request{Node: "a", Source: v1alpha1.SourceHost, Tag: "t3", At: h.now})
	h.Maintenance(maintenance("m1", "a", "soak t1", v1alpha1.PhaseRequested, ""), false)
	h.Maintenance(maintenance("api-1", "a", "soak", v1alpha1.PhaseRequested, ""), false)
	h.Maintenance(maintenance("m1", "a", "soak t1", v1alpha1.PhaseSucceeded, "rebooted"), false)
	h.Maintenance(maintenance("api-1", "a", "soak", v1alpha1.PhaseFailed, "drain failed"), false)
	// t3 was overtaken by a reboot before its daemon raised it.
	h.after(time.Second).Rebooted(Reboot{Node: "a", From: "a0", At: h.now})
	g.Expect(h.Final()).To(BeEmpty())
	g.Expect(h.Checked()).To(HaveKeyWithValue(CheckedEnds, 2+3+1), "two records, three requests, one node")

	h = newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p", func(n *corev1.Node) { n.Annotations[protocol.Cordoned] = "true"; n.Spec.Unschedulable = true }), false)
	h.Requested(Request{Node: "a", Source: v1alpha1.SourceHost, Tag: "lost", At: h.now})
	h.Maintenance(maintenance("open", "a", "x", v1alpha1.PhaseDraining, "draining"), false)
	h.Maintenance(maintenance("mute", "a", "y", v1alpha1.PhaseFailed, ""), false)
	h.Maintenance(maintenance("gone", "a", "z", v1alpha1.PhaseRebooting, ""), false)
	h.Maintenance(maintenance("gone", "a", "z", v1alpha1.PhaseRebooting, ""), true)
	vs := h.Final()
	g.Expect(invariants(vs)).To(Equal([]string{End, End, End, End, End}), "%v", vs)
}

// A request without a record of the soak's (an alert) is found by its
// node, source and time; one that has none is unrecorded when its node
// began a reboot after it, or came back from one after it: kmaint counts a
// reboot done when the node is back. A node back before the request, or
// never back, does not end it.
func TestARequestMadeWhileItsNodeWasAwayIsMetWhenTheNodeComesBack(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p", boot("a0", true)), false)
	h.Node(node("b", "p", boot("b0", true)), false)
	h.Rebooted(Reboot{Node: "a", From: "a0", To: "a1", At: h.now})
	h.Rebooted(Reboot{Node: "b", From: "b0", To: "b1", At: h.now})
	h.Node(node("a", "p", boot("a1", false)), false)
	h.Node(node("b", "p", boot("b1", true)), false)
	h.after(time.Second).Requested(Request{Node: "a", Source: v1alpha1.SourceAlert, At: h.now})
	h.Requested(Request{Node: "b", Source: v1alpha1.SourceAlert, At: h.now})
	g.Expect(h.Unmet()).To(Equal(2), "a is not back yet; b was back before its request")
	h.after(time.Second).Node(node("a", "p", boot("a1", true)), false)
	g.Expect(h.Unmet()).To(Equal(1), "a came back after its request")
	h.after(time.Second).Rebooted(Reboot{Node: "b", From: "b1", To: "b2", At: h.now})
	g.Expect(h.Unmet()).To(BeZero())
	g.Expect(h.Ends()).To(HaveKeyWithValue("alert", HaveKeyWithValue(Unrecorded, 2)))
}

func TestWhatTheCheckerCouldNotSeeIsNotHeldAgainstKmaint(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p", admitted("a1", "p")), false)
	h.Node(node("b", "p"), false)
	h.Node(node("c", "p"), false)
	// A list after a blind window shows b admitted and a released, and c
	// NotReady: which came first was not seen.
	h.after(time.Second).relist(node("a", "p"), node("b", "p", admitted("b1", "p")), node("c", "p", notReady))
	g.Expect(h.Violations()).To(BeEmpty())
	g.Expect(h.Checked()).To(HaveKeyWithValue(CheckedAdmissions, 2), "b's admission, first seen in the list, too")
	g.Expect(h.Excused()).To(HaveKeyWithValue(ExcusedListedDown, HaveField("Count", 1)), "c, down at the list, is not counted")

	// c rebooted while the checker was blind to nodes: its approval came
	// and went unseen. d rebooted outside the window, unapproved.
	from := h.now
	h.after(30*time.Second).blind("nodes", from, h.now)
	h.Rebooted(Reboot{Node: "c", From: "c1", At: from.Add(10 * time.Second), ByDaemon: true})
	h.Rebooted(Reboot{Node: "d", From: "d1", At: h.now.Add(time.Second), ByDaemon: true})
	h.Node(node("b", "p"), false)
	h.Node(node("c", "p"), false)
	vs := h.Final()
	g.Expect(invariants(vs)).To(Equal([]string{Approval}), "%v", vs)
	g.Expect(vs[0].Message).To(ContainSubstring("node d"))
	g.Expect(h.Checked()).To(HaveKeyWithValue(CheckedReboots, 1), "c's reboot is excused, not checked")
	g.Expect(h.Excused()).To(And(
		HaveKeyWithValue(ExcusedUnseenApproval, HaveField("Count", 1)),
		HaveKeyWithValue(ExcusedBlind+"nodes", Excuse{Count: 1, Seconds: 30, Why: excuseWhy(ExcusedBlind + "nodes")})))
}

// TestAPoolChangeCountsInTheOrderEtcdMadeItNotAsItsWatchDeliveredIt: the
// pools' watch and the nodes' are two streams; a pool resumed before an
// admission may arrive after it, and a pause after it before it.
func TestAPoolChangeCountsInTheOrderEtcdMadeItNotAsItsWatchDeliveredIt(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	at := func(version string, opts ...func(*corev1.Node)) *corev1.Node {
		n := node("a", "p", opts...)
		n.ResourceVersion = version
		return n
	}
	h.Pool(pool("p", "5", 1, true), false)
	h.Node(at("6"), false)
	// Resumed at 10, admitted at 11; the resume arrives second.
	h.after(time.Minute).Node(at("11", admitted("a1", "p")), false)
	h.Pool(pool("p", "10", 1, false), false)
	g.Expect(h.Violations()).To(BeEmpty())

	// Released at 12, paused again at 20 and admitted at 30, the pause
	// long seen.
	h.Node(at("12"), false)
	h.Pool(pool("p", "20", 1, true), false)
	h.after(time.Minute).Node(at("30", admitted("a2", "p")), false)
	g.Expect(invariants(h.Violations())).To(ConsistOf(Budget, Budget))
}

// TestAPoolListedAfterABlindWindowCountsFromItsStart: a resume made while
// the checker's pools' watch was away comes in a list, with the version of
// the pool's last write; it may have been made from just after the last
// version seen.
func TestAPoolListedAfterABlindWindowCountsFromItsStart(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.Pool(pool("p", "5", 1, true), false)
	a := node("a", "p")
	a.ResourceVersion = "6"
	h.Node(a, false)
	// Resumed at 8 (unseen), admitted at 9, a status write at 12; the
	// list after the window shows 12.
	h.after(time.Minute)
	a = node("a", "p", admitted("a1", "p"))
	a.ResourceVersion = "9"
	h.Node(a, false)
	h.Checker.pool(pool("p", "12", 1, false), false, &listing{from: 7, rv: 13})
	g.Expect(h.Violations()).To(BeEmpty())
}

func maintenance(name, node, reason string, phase v1alpha1.Phase, msg string) *v1alpha1.NodeMaintenance {
	return &v1alpha1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:   v1alpha1.NodeMaintenanceSpec{NodeName: node, Reason: reason, Source: v1alpha1.SourceHost},
		Status: v1alpha1.NodeMaintenanceStatus{Phase: phase, Message: msg}}
}

func pool(name, version string, budget int, paused bool) *v1alpha1.MaintenancePool {
	mu := intstr.FromInt32(int32(budget))
	return &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: version},
		Spec: v1alpha1.MaintenancePoolSpec{MaxUnavailable: &mu, Paused: paused}}
}

func boot(id string, ready bool) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Status.NodeInfo.BootID = id
		if !ready {
			notReady(n)
		}
	}
}

func settling(pool string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		b, _ := json.Marshal(map[string]any{"bootID": "a2", "rebootedBoot": "a1", "pool": pool})
		n.Annotations[protocol.Settling] = string(b)
	}
}
