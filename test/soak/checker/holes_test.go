package checker

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// The holes issue 61 found in the checker, each a history it must catch.
// The checker before it let each of these pass.

// The gate releases an admission before its approval (a request
// cancelled, an opt-out): the node may be admitted again in the same boot,
// and that admission is held to the budget like the first.
func TestAnAdmissionAgainInTheSameBootIsHeldToTheBudget(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p"), false)
	h.Node(node("b", "p"), false)
	first := h.now
	h.after(time.Second).Node(node("a", "p", admittedAt(first, "a1", "p", "r1")), false)
	h.after(time.Second).Node(node("a", "p"), false)
	h.after(time.Second).Node(node("b", "p", admitted("b1", "p", "r2")), false)
	g.Expect(h.Violations()).To(BeEmpty())
	h.after(time.Second).Node(node("a", "p", admittedAt(h.now, "a1", "p", "r1")), false)
	g.Expect(invariants(h.Violations())).To(ContainElement(Budget), "a again in boot a1, while b holds the pool's one slot")
}

// An admission first seen in a list after a blind window is held to the
// budget: the nodes kmaint holds at the list count, and so do the others
// the list shows first: the last admitted found them held.
func TestAnAdmissionFirstSeenInAListIsHeldToTheBudget(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p", admitted("a1", "p")), false)
	h.Node(node("b", "p"), false)
	h.Node(node("c", "q"), false)
	h.Node(node("d", "q"), false)
	h.pool("q", 1, false)
	h.after(time.Minute).relist(node("b", "p", admitted("b1", "p")))
	vs := h.Violations()
	g.Expect(invariants(vs)).To(Equal([]string{Budget}), "a held all through the window, and b admitted in it")
	g.Expect(vs[0].Message).To(ContainSubstring("first seen in a list"))
	h.after(time.Minute).relist(node("c", "q", admitted("c1", "q")), node("d", "q", admitted("d1", "q")))
	vs = h.Violations()
	g.Expect(invariants(vs)).To(Equal([]string{Budget, Budget}), "c and d both admitted in the window: the second found the first")
	g.Expect(vs[1].Message).To(ContainSubstring("first seen in a list"))
}

// The gate promises that an approval, too, keeps the pool within its
// budget: three nodes admitted under a budget of 3, then lowered to 1,
// are approved one at a time (the stale-budget approval fixed in
// 1a3ab40 approved all three).
func TestAnApprovalOverTheBudgetIsCaught(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 3, false)
	for _, name := range []string{"a", "b", "c"} {
		h.Node(node(name, "p", admitted(name+"1", "p")), false)
	}
	h.after(time.Minute).pool("p", 1, false)
	h.after(time.Minute).Node(node("a", "p", admitted("a1", "p"), approved("a1")), false)
	g.Expect(h.Violations()).To(BeEmpty(), "the first approved: one past its drain, budget 1")
	h.after(time.Second).Node(node("b", "p", admitted("b1", "p"), approved("b1")), false)
	g.Expect(invariants(h.Violations())).To(Equal([]string{Budget}), "the second approved: two past their drain")
	g.Expect(h.Checked()).To(HaveKeyWithValue(CheckedApprovals, 2))
}

// The budget is a standing check: a pool's count of nodes kmaint holds may
// not rise past its budget by any change, not only by an admission the
// checker saw: here a settle record written on a node of a full pool, and
// a node held by an admission that names no pool (written before records
// named one), which follows its label, relabelled into a full pool.
func TestAPoolPastItsBudgetWithoutAnAdmissionIsCaught(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 1, false)
	h.pool("q", 1, false)
	h.Node(node("a", "p", admitted("a1", "p")), false)
	h.Node(node("b", "p"), false)
	g.Expect(h.Violations()).To(BeEmpty())
	h.after(time.Minute).Node(node("b", "p", settling("p")), false)
	g.Expect(invariants(h.Violations())).To(Equal([]string{Budget}), "b settling in p beside a")

	h = newHistory()
	h.pool("p", 1, false)
	h.pool("q", 1, false)
	h.Node(node("c", "q", admitted("c1", "q")), false)
	h.Node(node("d", "p", admitted("d1", "")), false)
	g.Expect(h.Violations()).To(BeEmpty())
	h.after(time.Minute).Node(node("d", "q", admitted("d1", "")), false)
	g.Expect(invariants(h.Violations())).To(Equal([]string{Budget}), "d moved into q beside c")
}

// After a budget is lowered below the count, the count may only fall until
// it is within the budget: a node admitted meanwhile breaks it, even one
// the count had room for before.
func TestAfterABudgetIsLoweredTheCountMayOnlyFall(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 3, false)
	for _, name := range []string{"a", "b", "c"} {
		h.Node(node(name, "p", admitted(name+"1", "p")), false)
	}
	h.Node(node("d", "p"), false)
	h.after(time.Minute).pool("p", 1, false)
	h.after(time.Minute).Node(node("a", "p"), false)
	h.after(time.Minute).Node(node("b", "p"), false)
	g.Expect(h.Violations()).To(BeEmpty(), "three held under a budget of 1, falling")
	h.after(time.Minute).Node(node("a", "p", admitted("a2", "p")), false)
	g.Expect(invariants(h.Violations())).To(ConsistOf(Budget, Budget), "the admission, and the count rising")
}

// Each grace excuses a lag up to its bound, and no more: a change one
// second past it is caught.
func TestALagOneSecondPastEachGraceIsCaught(t *testing.T) {
	for name, c := range map[string]struct {
		grace  time.Duration
		change func(h *history)
		excuse string
	}{
		"a budget lowered": {liveReadSpan, func(h *history) { h.pool("p", 1, false) }, ExcusedPoolChange},
		"a pool paused":    {liveReadSpan, func(h *history) { h.pool("p", 2, true) }, ExcusedPoolChange},
	} {
		t.Run(name, func(t *testing.T) {
			for lag, caught := range map[time.Duration]bool{c.grace - 100*time.Millisecond: false, c.grace + time.Second: true} {
				g := NewWithT(t)
				h := oneOfTwoHeld()
				c.change(h)
				h.after(lag).Node(node("b", "p", admitted("b1", "p")), false)
				if caught {
					g.Expect(invariants(h.Violations())).To(ContainElement(Budget), "admitted %s after", lag)
					continue
				}
				g.Expect(h.Violations()).To(BeEmpty(), "admitted %s after", lag)
				g.Expect(h.Excused()).To(HaveKeyWithValue(c.excuse, HaveField("Seconds", BeNumerically("~", lag.Seconds(), 0.01))))
			}
		})
	}
}

// A node down of its own is excused only where the view the gate counted
// from is older than its change, however long ago that was; from a view
// that holds it, it is caught however short its lag.
func TestANodeDownInTheGatesViewIsCaughtHoweverShortItsLag(t *testing.T) {
	for name, change := range map[string]func(h *history){
		"a node NotReady": func(h *history) { h.Node(node("c", "p", notReady), false) },
		"a node cordoned by someone else": func(h *history) {
			h.Node(node("c", "p", func(n *corev1.Node) { n.Spec.Unschedulable = true }), false)
		},
	} {
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct {
				lag    time.Duration
				before bool // the view is of the version before the change
			}{{10 * time.Millisecond, false}, {time.Minute, true}} {
				g := NewWithT(t)
				h := oneOfTwoHeld()
				change(h)
				view := h.version()
				if c.before {
					view--
				}
				h.after(c.lag).Node(node("b", "p", admitted("b1", "p"), seeing(view)), false)
				if !c.before {
					g.Expect(invariants(h.Violations())).To(ContainElement(Budget), "admitted %s after, from a view that held it", c.lag)
					continue
				}
				g.Expect(h.Violations()).To(BeEmpty(), "admitted %s after, from a view before it", c.lag)
				g.Expect(h.Excused()).To(HaveKeyWithValue(ExcusedNodeDown, HaveField("Seconds", BeNumerically("~", c.lag.Seconds(), 0.01))))
			}
		})
	}
}

// oneOfTwoHeld is a minute into a pool of budget 2 whose node a is
// admitted, b and c Ready: one more admission fits.
func oneOfTwoHeld() *history {
	h := newHistory()
	h.pool("p", 2, false)
	h.Node(node("a", "p", admitted("a1", "p")), false)
	h.Node(node("b", "p"), false)
	h.Node(node("c", "p"), false)
	return h.after(time.Minute)
}

// A request is ended by its own end only: a cron schedule's fire that
// kmaint never recorded is not ended by a reboot someone else asked for,
// unless the node had another request open (a policy asks for no node
// that has one); a host request is not ended by the record of another
// whose name begins like its own.
func TestARequestEndedOnlyBySomeoneElsesRebootIsCaught(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p"), false)
	h.Requested(Request{Node: "a", Source: v1alpha1.SourceSchedule, Tag: "soak-3", At: h.now})
	h.after(time.Minute).Rebooted(Reboot{Node: "a", From: "a0", To: "a1", At: h.now})
	vs := h.Final()
	g.Expect(invariants(vs)).To(Equal([]string{End}), "%v", vs)

	h = newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p"), false)
	h.Maintenance(maintenance("open", "a", "soak soak-1", v1alpha1.PhaseRequested, ""), false)
	h.Requested(Request{Node: "a", Source: v1alpha1.SourceSchedule, Tag: "soak-3", At: h.now})
	h.after(time.Minute).Rebooted(Reboot{Node: "a", From: "a0", To: "a1", At: h.now})
	h.Maintenance(maintenance("open", "a", "soak soak-1", v1alpha1.PhaseSucceeded, "rebooted"), false)
	g.Expect(h.Final()).To(BeEmpty(), "another request was open when it fired")
	g.Expect(h.Ends()).To(HaveKeyWithValue("schedule", HaveKeyWithValue(Unrecorded, 1)))

	h = newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p"), false)
	h.Requested(Request{Node: "a", Source: v1alpha1.SourceHost, Tag: "soak-5", At: h.now})
	h.Requested(Request{Node: "a", Source: v1alpha1.SourceHost, Tag: "soak-50", At: h.now})
	h.Maintenance(maintenance("m50", "a", "soak soak-50", v1alpha1.PhaseSucceeded, "rebooted"), false)
	vs = h.Final()
	g.Expect(invariants(vs)).To(Equal([]string{End}), "%v", vs)
	g.Expect(vs[0].Message).To(ContainSubstring(`"soak-5"`))
}

// How each request ended is told apart: carried out by a reboot kmaint
// approved naming it, overtaken by another reboot its record succeeded on,
// unrecorded, refused.
func TestEachRequestsEndIsToldApart(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 1, false)
	withID := func(nm *v1alpha1.NodeMaintenance, id string) *v1alpha1.NodeMaintenance {
		nm.Status.RequestID = id
		return nm
	}
	h.Node(node("a", "p"), false)
	h.Requested(Request{Node: "a", Source: v1alpha1.SourceHost, Tag: "soak-1", At: h.now})
	h.Requested(Request{Node: "a", Source: v1alpha1.SourceHost, Tag: "soak-2", At: h.now})
	h.Requested(Request{Node: "a", Source: v1alpha1.SourceHost, Tag: "soak-3", At: h.now})
	h.Requested(Request{Node: "a", Source: v1alpha1.SourceHost, Tag: "soak-4", At: h.now})
	h.Maintenance(withID(maintenance("m1", "a", "soak soak-1", v1alpha1.PhaseSucceeded, "rebooted"), "h1"), false)
	h.Maintenance(withID(maintenance("m2", "a", "soak soak-2", v1alpha1.PhaseSucceeded, "rebooted"), "h2"), false)
	h.Maintenance(withID(maintenance("m3", "a", "soak soak-3", v1alpha1.PhaseFailed, "cancelled"), "h3"), false)
	h.Node(node("a", "p", admitted("a0", "p", "h1"), approved("a0")), false)
	h.after(time.Second).Rebooted(Reboot{Node: "a", From: "a0", To: "a1", At: h.now, ByDaemon: true})
	h.Node(node("a", "p", boot("a1", true)), false)
	g.Expect(h.Final()).To(BeEmpty())
	g.Expect(h.Ends()).To(Equal(map[string]map[Ending]int{"host": {CarriedOut: 1, Overtaken: 1, Refused: 1, Unrecorded: 1}}))
}

// A node rebooted by kmaint for a config does not run it after only if
// the reboot did not apply it: asked for again in its next boot, and
// rebooted again for it, it is rebooted twice for one request. A node that
// ran the config and moved on may be rebooted for it again.
func TestAConfigIsRebootedForOnce(t *testing.T) {
	g := NewWithT(t)
	configRequest := func(boot, config string) func(*corev1.Node) {
		return func(n *corev1.Node) {
			n.Annotations[protocol.RebootRequested] = protocol.Encode(protocol.Requested{BootID: boot, Requests: []protocol.Request{
				{ID: v1alpha1.ConfigRequestID(boot, config), Source: v1alpha1.SourceConfig, Reason: "pool wants config " + config, Config: config}}})
		}
	}
	running := func(config string) func(*corev1.Node) {
		return func(n *corev1.Node) { n.Annotations[protocol.CurrentConfig] = config }
	}
	reboot := func(h *history, from, to, config string, then ...func(*corev1.Node)) {
		h.Node(node("a", "p", configRequest(from, config), admitted(from, "p", v1alpha1.ConfigRequestID(from, config)), approved(from)), false)
		h.after(time.Second).Rebooted(Reboot{Node: "a", From: from, To: to, At: h.now, ByDaemon: true})
		h.after(time.Second).Node(node("a", "p", then...), false)
	}
	h := newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p", running("c0")), false)
	reboot(h, "a0", "a1", "c1", running("c0"))
	reboot(h, "a1", "a2", "c1", running("c1"))
	g.Expect(invariants(h.Final())).To(Equal([]string{Once}), "c1 not applied by the first reboot")
	g.Expect(h.Checked()).To(HaveKeyWithValue(CheckedConfigs, 1))

	h = newHistory()
	h.pool("p", 1, false)
	h.Node(node("a", "p", running("c0")), false)
	reboot(h, "a0", "a1", "c1", running("c1"))
	reboot(h, "a1", "a2", "c2", running("c2"))
	reboot(h, "a2", "a3", "c1", running("c1"))
	g.Expect(h.Final()).To(BeEmpty(), "c1, c2, and back to c1")
}

// An approval is bound to the boot the node's admission is of: one alone,
// or of another boot, was not written by the gate.
func TestAnApprovalNamesTheBootItsAdmissionIsOf(t *testing.T) {
	g := NewWithT(t)
	h := newHistory()
	h.pool("p", 2, false)
	h.Node(node("a", "p"), false)
	h.Node(node("b", "p", admitted("b1", "p")), false)
	h.after(time.Second).Node(node("a", "p", approved("a1")), false)
	h.after(time.Second).Node(node("b", "p", admitted("b1", "p"), approved("b0")), false)
	g.Expect(invariants(h.Violations())).To(Equal([]string{Approval, Approval}))
}
