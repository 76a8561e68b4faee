package maintenance

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

// hooked writes the gate's hook record.
func hooked(rec protocol.HookRecord) gen.NodeOption {
	return gen.Annotations(protocol.Hook, protocol.Encode(rec))
}

func TestHookTimesFollowTheNodesRecord(t *testing.T) {
	g := NewWithT(t)
	admitted := t0.Add(time.Minute)
	nm := maintenanceIn(raisedIn(v1alpha1.PhaseDraining, "boot-0"))
	record := func(now time.Time, opts ...gen.NodeOption) {
		node := gen.Node("n1", append([]gen.NodeOption{gen.Unschedulable(), gen.RequestedIDs("boot-0", v1alpha1.SourceAPI, t0, reqID),
			gen.Admitted("boot-0", admitted, reqID)}, opts...)...)
		f := read(node)
		v := decide(nm, reqID, f, "", waiting{}, guard{guarded: true})
		apply(&nm.Status, v, now)
		recordHookTimes(&nm.Status, hookStretches(v.bootIDBefore, f), now)
	}
	at := func(d time.Duration) time.Time { return admitted.Add(d) }
	stage := protocol.HookProgress{Name: "stage", Attempt: 1, Since: at(10 * time.Second)}

	// Waiting at beforeReboot: open.
	record(at(20*time.Second), hooked(protocol.HookRecord{Point: protocol.BeforeReboot, BootID: "boot-0", Token: "t1", Since: at(10 * time.Second),
		Hooks: []protocol.HookProgress{stage}}))
	g.Expect(nm.Status.HookTimes).To(HaveLen(1))
	h := nm.Status.HookTimes[0]
	g.Expect(h.Point).To(Equal("beforeReboot"))
	g.Expect(h.Hooks).To(Equal([]string{"stage"}))
	g.Expect(h.Started.Time).To(Equal(at(10 * time.Second)))
	g.Expect(h.Passed).To(BeNil())

	// The controller missed the beforeDrain point and the pass: the record
	// of the point after the reboot carries both.
	passed := stage
	passed.Passed = at(40 * time.Second)
	check := protocol.HookProgress{Name: "check", Attempt: 1, Since: at(90 * time.Second)}
	after := protocol.HookRecord{Point: protocol.AfterReboot, BootID: "boot-1", Token: "t3", Since: at(90 * time.Second), Hooks: []protocol.HookProgress{check},
		Earlier: []protocol.HookStretch{
			{Point: protocol.BeforeDrain, BootID: "boot-0", Hooks: []string{"db"}, Since: at(0), Passed: at(5 * time.Second)},
			{Point: protocol.BeforeReboot, BootID: "boot-0", Hooks: []string{"stage"}, Since: at(10 * time.Second), Passed: at(40 * time.Second)},
		}}
	record(at(100*time.Second), gen.BootID("boot-1"), gen.Approved("boot-0"), hooked(after))
	g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseRebooting))
	var points []string
	for _, h := range nm.Status.HookTimes {
		points = append(points, h.Point)
	}
	g.Expect(points).To(Equal([]string{"beforeDrain", "beforeReboot", "afterReboot"}), "in the order of the path")
	g.Expect(nm.Status.HookTimes[0].Passed.Time).To(Equal(at(5 * time.Second)))
	g.Expect(nm.Status.HookTimes[1].Started.Time).To(Equal(at(10*time.Second)), "the first time reached is kept")
	g.Expect(nm.Status.HookTimes[1].Passed.Time).To(Equal(at(40 * time.Second)))
	g.Expect(nm.Status.HookTimes[2].Passed).To(BeNil())

	// A record of another admission (another boot) says nothing of this
	// request; an afterReboot record of a boot the node is not in either.
	other := maintenanceIn(raisedIn(v1alpha1.PhaseDraining, "boot-0"))
	f := read(gen.Node("n1", gen.BootID("boot-0"), gen.Admitted("boot-0", admitted, reqID), hooked(protocol.HookRecord{Point: protocol.BeforeDrain, BootID: "boot-9", Since: at(0)})))
	recordHookTimes(&other.Status, hookStretches("boot-0", f), at(time.Minute))
	g.Expect(other.Status.HookTimes).To(BeEmpty())
	f = read(gen.Node("n1", gen.BootID("boot-0"), gen.Admitted("boot-0", admitted, reqID), gen.Approved("boot-0"), hooked(after)))
	g.Expect(hookStretches("boot-0", f)).To(HaveLen(2), "the node is not in the record's boot after the reboot")
}

func TestHookTimesFromAnotherClockAreNotAhead(t *testing.T) {
	g := NewWithT(t)
	var s v1alpha1.NodeMaintenanceStatus
	now := t0
	recordHookTimes(&s, []protocol.HookStretch{{Point: protocol.BeforeDrain, Hooks: []string{"db"}, Since: now.Add(time.Hour), Passed: now.Add(2 * time.Hour)}}, now)
	g.Expect(s.HookTimes[0].Started).To(Equal(metav1.NewTime(now)))
	g.Expect(s.HookTimes[0].Passed.Time).To(Equal(now))

	// Reached again after it passed (drained again): open again.
	recordHookTimes(&s, []protocol.HookStretch{{Point: protocol.BeforeDrain, Hooks: []string{"db"}, Since: now.Add(time.Minute)}}, now.Add(time.Minute))
	g.Expect(s.HookTimes[0].Passed).To(BeNil())
	g.Expect(s.HookTimes[0].Started).To(Equal(metav1.NewTime(now)))
}

// A record written by hand (the operator's own is kept to its writer by
// admission) never makes a status the API would refuse: that would stop
// every write of the request's status.
func TestHookTimesStayWithinTheAPIsBounds(t *testing.T) {
	g := NewWithT(t)
	admitted := t0.Add(time.Minute)
	var names []string
	for i := range 12 {
		names = append(names, fmt.Sprintf("hook-%02d-%s", i, strings.Repeat("x", 70)))
	}
	var hooks []protocol.HookProgress
	for _, n := range names {
		hooks = append(hooks, protocol.HookProgress{Name: n, Since: admitted})
	}
	rec := protocol.HookRecord{Point: protocol.BeforeReboot, BootID: "boot-0", Since: admitted, Hooks: hooks,
		Earlier: []protocol.HookStretch{{Point: "sideways", BootID: "boot-0", Since: admitted}}}
	f := read(gen.Node("n1", gen.BootID("boot-0"), gen.Admitted("boot-0", admitted, reqID), hooked(rec)))
	var s v1alpha1.NodeMaintenanceStatus
	recordHookTimes(&s, hookStretches("boot-0", f), admitted)
	g.Expect(s.HookTimes).To(HaveLen(1), "the unknown point is left out")
	g.Expect(s.HookTimes[0].Hooks).To(HaveLen(8))
	for _, n := range s.HookTimes[0].Hooks {
		g.Expect(len(n)).To(BeNumerically("<=", 63))
	}
}
