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

// history drives a checker with a clock of its own.
type history struct {
	*Checker
	now time.Time
}

const grace = 10 * time.Second

func newHistory() *history {
	h := &history{now: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)}
	h.Checker = New("pool", grace, func() time.Time { return h.now })
	return h
}

func (h *history) after(d time.Duration) *history {
	h.now = h.now.Add(d)
	return h
}

func (h *history) pool(name string, budget int, paused bool) {
	mu := intstr.FromInt32(int32(budget))
	h.Pool(&v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.MaintenancePoolSpec{MaxUnavailable: &mu, Paused: paused}}, false)
}

// node is a Ready node of a pool; each option changes it.
func node(name, pool string, opts ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": pool}, Annotations: map[string]string{}}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	for _, o := range opts {
		o(n)
	}
	return n
}

func admitted(boot, pool string, requests ...string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		b, _ := json.Marshal(map[string]any{"bootID": boot, "requests": requests, "pool": pool})
		n.Annotations[protocol.Admitted] = string(b)
		n.Annotations[protocol.Cordoned] = "true"
		n.Spec.Unschedulable = true
	}
}

func approved(boot string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Annotations[protocol.RebootApproved] = boot }
}

func notReady(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }

func invariants(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Invariant)
	}
	return out
}

func TestAnAdmissionOverTheBudgetIsCaught(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p"), false)
	h.Node(node("b", "p"), false)
	h.after(time.Second).Node(node("a", "p", admitted("a1", "p", "r1")), false)
	g.Expect(h.Violations()).To(BeEmpty(), "one of a budget of one")
	h.after(time.Second).Node(node("b", "p", admitted("b1", "p", "r2")), false)
	g.Expect(invariants(h.Violations())).To(Equal([]string{Budget}), "two of a budget of one")
}

func TestANodeDownOfItsOwnCountsOnceTheGateCanHaveSeenIt(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p"), false)
	h.Node(node("b", "p"), false)
	h.Node(node("c", "p"), false)
	// b goes NotReady a moment before a's admission: a race, not a fault
	// of the gate's.
	h.after(time.Second).Node(node("b", "p", notReady), false)
	h.after(time.Second).Node(node("a", "p", admitted("a1", "p")), false)
	g.Expect(h.Violations()).To(BeEmpty())
	// c's admission comes long after b went down (and a's slot is gone).
	h.after(time.Second).Node(node("a", "p"), false)
	h.after(grace).Node(node("c", "p", admitted("c1", "p")), false)
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
	h.after(time.Second).Node(node("b", "p", admitted("b1", "p")), false)
	g.Expect(h.Violations()).To(BeEmpty(), "lowered a second before")
	h.after(grace).pool("p", 2, true)
	h.after(grace).Node(node("c", "p", admitted("c1", "p")), false)
	g.Expect(invariants(h.Violations())).To(Equal([]string{Budget}), "paused for the grace")
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
	g.Expect(invariants(h.Violations())).To(Equal([]string{Budget}))
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
	g.Expect(invariants(h.Violations())).To(Equal([]string{Budget}))
}

func settling(pool string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		b, _ := json.Marshal(map[string]any{"bootID": "a2", "rebootedBoot": "a1", "pool": pool})
		n.Annotations[protocol.Settling] = string(b)
	}
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

	h = newHistory()
	h.Rebooted(Reboot{Node: "a", From: "a1", At: h.now, ByDaemon: true})
	g.Expect(invariants(h.Final())).To(Equal([]string{Approval}), "never approved")

	h = newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p", admitted("a1", "p"), approved("a1")), false)
	h.Rebooted(Reboot{Node: "a", From: "a1", At: h.now, ByDaemon: true, Again: true})
	g.Expect(invariants(h.Final())).To(ContainElement(Approval), "asked twice")
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
	nm := func(name, node, reason string, phase v1alpha1.Phase, msg string) *v1alpha1.NodeMaintenance {
		return &v1alpha1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:   v1alpha1.NodeMaintenanceSpec{NodeName: node, Reason: reason, Source: v1alpha1.SourceHost},
			Status: v1alpha1.NodeMaintenanceStatus{Phase: phase, Message: msg}}
	}
	h := newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p"), false)
	h.Requested(Request{Node: "a", Source: v1alpha1.SourceHost, Tag: "t1", At: h.now})
	h.Requested(Request{Node: "a", Source: v1alpha1.SourceAPI, Tag: "api-1", At: h.now})
	h.Requested(Request{Node: "a", Source: v1alpha1.SourceHost, Tag: "t3", At: h.now})
	h.Maintenance(nm("m1", "a", "soak t1", v1alpha1.PhaseRequested, ""), false)
	h.Maintenance(nm("api-1", "a", "soak", v1alpha1.PhaseRequested, ""), false)
	h.Maintenance(nm("m1", "a", "soak t1", v1alpha1.PhaseSucceeded, "rebooted"), false)
	h.Maintenance(nm("api-1", "a", "soak", v1alpha1.PhaseFailed, "drain failed"), false)
	// t3 was overtaken by a reboot before its daemon raised it.
	h.after(time.Second).Rebooted(Reboot{Node: "a", From: "a0", At: h.now})
	g.Expect(h.Final()).To(BeEmpty())
	g.Expect(h.Checked()).To(HaveKeyWithValue(End, 2+3+1), "two records, three requests, one node")

	h = newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p", func(n *corev1.Node) { n.Annotations[protocol.Cordoned] = "true"; n.Spec.Unschedulable = true }), false)
	h.Requested(Request{Node: "a", Source: v1alpha1.SourceHost, Tag: "lost", At: h.now})
	h.Maintenance(nm("open", "a", "x", v1alpha1.PhaseDraining, "draining"), false)
	h.Maintenance(nm("mute", "a", "y", v1alpha1.PhaseFailed, ""), false)
	h.Maintenance(nm("gone", "a", "z", v1alpha1.PhaseRebooting, ""), false)
	h.Maintenance(nm("gone", "a", "z", v1alpha1.PhaseRebooting, ""), true)
	vs := h.Final()
	g.Expect(invariants(vs)).To(Equal([]string{End, End, End, End, End}), "%v", vs)
}

// A request without a record of the soak's (an alert, a schedule's fire) is
// met by a reboot begun after it, or by one begun before it that the node
// came back from after it: kmaint counts a reboot done when the node is
// back. A node back before the request, or never back, does not meet it.
func TestARequestMadeWhileItsNodeWasAwayIsMetWhenTheNodeComesBack(t *testing.T) {
	g := NewWithT(t)
	boot := func(id string, ready bool) func(*corev1.Node) {
		return func(n *corev1.Node) {
			n.Status.NodeInfo.BootID = id
			if !ready {
				notReady(n)
			}
		}
	}
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
}

func TestWhatTheCheckerCouldNotSeeIsNotHeldAgainstKmaint(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p", admitted("a1", "p")), false)
	h.Node(node("b", "p"), false)
	// A relist after a blind window shows b admitted and a not yet
	// released: the release came first, unseen.
	h.after(time.Second).node(node("b", "p", admitted("b1", "p")), false, true)
	g.Expect(h.Violations()).To(BeEmpty())
	h.Node(node("a", "p"), false)

	// c rebooted while the checker was blind to nodes: its approval came
	// and went unseen. d rebooted outside the window, unapproved.
	from := h.now
	h.after(30*time.Second).blind("nodes", from, h.now)
	h.Rebooted(Reboot{Node: "c", From: "c1", At: from.Add(10 * time.Second), ByDaemon: true})
	h.Rebooted(Reboot{Node: "d", From: "d1", At: h.now.Add(time.Second), ByDaemon: true})
	h.Node(node("b", "p"), false)
	vs := h.Final()
	g.Expect(invariants(vs)).To(Equal([]string{Approval}), "%v", vs)
	g.Expect(vs[0].Message).To(ContainSubstring("node d"))
}

// TestAPoolChangeCountsInTheOrderEtcdMadeItNotAsItsWatchDeliveredIt: the
// pools' watch and the nodes' are two streams; a pool resumed before an
// admission may arrive after it, and a pause after it before it.
func TestAPoolChangeCountsInTheOrderEtcdMadeItNotAsItsWatchDeliveredIt(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	pool := func(version string, paused bool) *v1alpha1.MaintenancePool {
		mu := intstr.FromInt32(1)
		return &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: version},
			Spec: v1alpha1.MaintenancePoolSpec{MaxUnavailable: &mu, Paused: paused}}
	}
	at := func(version string, opts ...func(*corev1.Node)) *corev1.Node {
		n := node("a", "p", opts...)
		n.ResourceVersion = version
		return n
	}
	h.Pool(pool("5", true), false)
	h.Node(at("6"), false)
	// Resumed at 10, admitted at 11; the resume arrives second.
	h.after(time.Minute).Node(at("11", admitted("a1", "p")), false)
	h.Pool(pool("10", false), false)
	g.Expect(h.Violations()).To(BeEmpty())

	// Released at 12, paused again at 20 and admitted at 30, the pause
	// long seen.
	h.Node(at("12"), false)
	h.Pool(pool("20", true), false)
	h.after(time.Minute).Node(at("30", admitted("a2", "p")), false)
	g.Expect(invariants(h.Violations())).To(Equal([]string{Budget}))
}

// TestAPoolListedAfterABlindWindowCountsFromItsStart: a resume made while
// the checker's pools' watch was away comes in a list, with the version of
// the pool's last write; it counts from just after the last version seen.
func TestAPoolListedAfterABlindWindowCountsFromItsStart(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	mu := intstr.FromInt32(1)
	pool := func(version string, paused bool) *v1alpha1.MaintenancePool {
		return &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: version},
			Spec: v1alpha1.MaintenancePoolSpec{MaxUnavailable: &mu, Paused: paused}}
	}
	h.Pool(pool("5", true), false)
	a := node("a", "p")
	a.ResourceVersion = "6"
	h.Node(a, false)
	// Resumed at 8 (unseen), admitted at 9, a status write at 12; the
	// list after the window shows 12.
	h.after(time.Minute)
	a = node("a", "p", admitted("a1", "p"))
	a.ResourceVersion = "9"
	h.Node(a, false)
	h.Checker.pool(pool("12", false), false, 7)
	g.Expect(h.Violations()).To(BeEmpty())
}
