package protocol_test

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

// read reads n, failing the test on an unreadable annotation: every
// transition writes what Read reads.
func read(g Gomega, n *corev1.Node) protocol.NodeState {
	s, err := protocol.Read(n)
	g.Expect(err).NotTo(HaveOccurred())
	return s
}

// apply returns a copy of n with the transitions applied, as the operator
// patches them.
func apply(n *corev1.Node, ts ...protocol.Transition) *corev1.Node {
	n = n.DeepCopy()
	for _, t := range ts {
		t.Apply(n)
	}
	return n
}

// A reboot's whole path, as the operator writes it, read back at every
// step as every reader reads a node.
func TestTransitionsReadBackAlongTheRebootPath(t *testing.T) {
	g := NewWithT(t)
	admission := protocol.Admission{BootID: "boot-0", Requests: []string{"h1"}, Time: t0, Pool: "web"}
	asked := gen.Node("n", gen.BootID("boot-0"), gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h1"))
	g.Expect(read(g, asked).WantsAdmission()).To(BeTrue())

	admitted := apply(asked, protocol.HoldAdmission(&protocol.Held{Reason: "DoNotDisrupt", Message: "pod p", Since: t0}), protocol.Admit(admission))
	s := read(g, admitted)
	g.Expect(s.Draining()).To(BeTrue())
	g.Expect(s.Unschedulable).To(BeTrue(), "cordoned in the same write")
	g.Expect(s.Cordoned).To(BeTrue(), "by kmaint, so kmaint uncordons it")
	g.Expect(s.Held).To(BeNil(), "what held it is no longer true")
	g.Expect(s.Unavailable()).To(BeTrue(), "it holds its slot")
	g.Expect(s.WantsAdmission()).To(BeFalse())
	g.Expect(s.Position(false).Stage).To(Equal(v1alpha1.PhaseDraining))

	approvedAt := t0.Add(time.Minute)
	approved := apply(admitted, protocol.Approve(*s.Admission, approvedAt, false))
	s = read(g, approved)
	g.Expect(s.Approved).To(Equal("boot-0"), "approved for the boot it was admitted in")
	g.Expect(s.Admission.ApprovedAt).To(Equal(approvedAt), "its return is timed from the approval")
	g.Expect(s.Position(false).Stage).To(Equal(v1alpha1.PhaseApproved))

	// The daemon reboots; the kubelet reports a new boot, the new boot's
	// daemon finds no request in it.
	back := approved.DeepCopy()
	back.Status.NodeInfo.BootID = "boot-1"
	delete(back.Annotations, protocol.RebootRequested)
	g.Expect(read(g, back).RebootDone()).To(BeTrue())

	done := read(g, apply(back, protocol.Complete(nil, nil)))
	g.Expect(done.Position(false).Stage).To(Equal(protocol.StageIdle))
	g.Expect(done.Unavailable()).To(BeFalse(), "its slot is free")
	g.Expect(kmaintKeys(done.Node)).To(BeEmpty(), "nothing of the reboot is left")

	settle := &protocol.Settle{BootID: "boot-1", RebootedBoot: "boot-0", Requests: []string{"h1"}, Pool: "web", Since: t0, Until: t0.Add(time.Minute)}
	settling := apply(back, protocol.Complete(nil, settle))
	s = read(g, settling)
	g.Expect(s.Position(false).Stage).To(Equal(v1alpha1.PhaseSettling))
	g.Expect(s.Unavailable()).To(BeTrue(), "a settling node keeps its slot")
	g.Expect(s.Unschedulable).To(BeFalse(), "and is back in service")
	g.Expect(s.WantsAdmission()).To(BeFalse())

	failed := *settle
	failed.Failure = &protocol.HealthCheckFailure{Check: "up", Time: t0}
	g.Expect(read(g, apply(settling, protocol.UpdateSettle(failed))).HealthCheckFailed()).To(BeTrue())

	settled := read(g, apply(settling, protocol.Settled()))
	g.Expect(settled.Position(false).Stage).To(Equal(protocol.StageIdle))
	g.Expect(settled.Unavailable()).To(BeFalse())
}

// Every way an admission ends before its approval frees the slot and puts
// the node back in service, and says what becomes of its requests.
func TestTransitionsThatEndAnAdmission(t *testing.T) {
	admission := protocol.Admission{BootID: "boot-0", Requests: []string{"h1"}, Time: t0}
	admitted := apply(gen.Node("n", gen.BootID("boot-0"), gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h1")),
		protocol.Admit(admission), protocol.Mark(&v1alpha1.NodeMarking{DuringReboot: &v1alpha1.DuringRebootMarks{
			Labels: map[string]v1alpha1.MarkValue{"rebooting": "true"}}}))
	for name, tc := range map[string]struct {
		t     protocol.Transition
		check func(Gomega, protocol.NodeState)
	}{
		"released: its requests wait again": {t: protocol.Release(), check: func(g Gomega, s protocol.NodeState) {
			g.Expect(s.WantsAdmission()).To(BeTrue())
		}},
		"retried: its requests wait for the next attempt": {
			t: protocol.Retry(protocol.DrainRetrying{BootID: "boot-0", Requests: []string{"h1"}, Attempts: 1, MaxAttempts: 3, NextAt: t0.Add(time.Hour)}),
			check: func(g Gomega, s protocol.NodeState) {
				g.Expect(s.Retrying()).NotTo(BeNil())
				g.Expect(s.BackingOff(t0)).To(BeTrue())
			}},
		"abandoned: the same requests are not admitted again": {
			t: protocol.Abandon(protocol.DrainFailure{BootID: "boot-0", Requests: []string{"h1"}, Time: t0, Reason: v1alpha1.DrainTimeoutReason}),
			check: func(g Gomega, s protocol.NodeState) {
				g.Expect(s.WantsAdmission()).To(BeFalse())
				g.Expect(s.DrainFailedForCurrent()).To(BeTrue())
				g.Expect(s.Degraded()).To(BeTrue())
			}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s := read(g, apply(admitted, tc.t))
			g.Expect(s.Admission).To(BeNil())
			g.Expect(s.Unavailable()).To(BeFalse(), "its slot is free")
			g.Expect(s.Unschedulable).To(BeFalse(), "uncordoned: kmaint cordoned it")
			g.Expect(s.Marks).To(BeNil())
			g.Expect(s.Node.Labels).NotTo(HaveKey("rebooting"), "kmaint's marks are off")
			tc.check(g, s)
		})
	}
}

// A node someone else cordoned stays cordoned when kmaint lets it go.
func TestReleaseLeavesAnotherCordon(t *testing.T) {
	g := NewWithT(t)
	n := apply(gen.Node("n", gen.BootID("boot-0"), gen.Unschedulable()),
		protocol.Admit(protocol.Admission{BootID: "boot-0", Time: t0}))
	g.Expect(n.Annotations).NotTo(HaveKey(protocol.Cordoned), "kmaint did not cordon it")
	s := read(g, apply(n, protocol.Release()))
	g.Expect(s.Admission).To(BeNil())
	g.Expect(s.Unschedulable).To(BeTrue())
}

// A reboot completed without its daemon says so until the daemon is back;
// a node not back says so until it is.
func TestTransitionsOfTheWaitsAfterTheApproval(t *testing.T) {
	g := NewWithT(t)
	approved := apply(gen.Node("n", gen.BootID("boot-0"), gen.RequestedIDs("boot-0", v1alpha1.SourceHost, t0, "h1")),
		protocol.Admit(protocol.Admission{BootID: "boot-0", Requests: []string{"h1"}, Time: t0}),
		protocol.Approve(protocol.Admission{BootID: "boot-0", Requests: []string{"h1"}, Time: t0}, t0, false))

	notBack := apply(approved, protocol.MarkNotBack(protocol.NotBack{ApprovedBoot: "boot-0", ApprovedAt: t0, Since: t0.Add(time.Hour)}))
	g.Expect(read(g, notBack).NodeNotBackReported()).To(BeTrue())
	g.Expect(read(g, apply(notBack, protocol.ForgetNotBack())).NotBack).To(BeNil())

	// Back in a new boot; the daemon never clears the old boot's request.
	back := notBack.DeepCopy()
	back.Status.NodeInfo.BootID = "boot-1"
	g.Expect(read(g, back).AwaitingDaemon()).To(BeTrue())
	waiting := apply(back, protocol.AwaitDaemon(protocol.UnconfirmedReboot{ApprovedBoot: "boot-0", BootID: "boot-1", Since: t0}))
	g.Expect(read(g, waiting).UnconfirmedFor()).NotTo(BeNil())

	s := read(g, apply(waiting, protocol.CompleteWithoutDaemon(nil, nil)))
	g.Expect(s.Approved).To(BeEmpty())
	g.Expect(s.Admission).To(BeNil())
	g.Expect(s.NotBack).To(BeNil(), "it is back")
	g.Expect(s.Unschedulable).To(BeFalse())
	g.Expect(s.DaemonMissing()).To(BeTrue(), "the daemon is still missing, and the node says so")
	g.Expect(s.Current()).To(BeNil(), "the old boot's request is never taken for this boot's")
	g.Expect(read(g, apply(s.Node, protocol.ForgetUnconfirmed())).Unconfirmed).To(BeNil())

	// An approval older than ApprovedAt is timed from when the gate saw it.
	legacy := read(g, apply(approved, protocol.TimeReturn(protocol.Admission{BootID: "boot-0", Time: t0}, t0.Add(time.Hour))))
	g.Expect(legacy.Admission.ApprovedAt).To(Equal(t0.Add(time.Hour)))
}

// Each transition writes exactly the keys the package doc's table gives
// it, so that what a step touches is said once: every other annotation, the
// daemon's among them, is left as it was.
func TestEachTransitionWritesOnlyItsAnnotations(t *testing.T) {
	admission := protocol.Admission{BootID: "boot-0", Time: t0}
	marking := &v1alpha1.NodeMarking{
		DuringReboot: &v1alpha1.DuringRebootMarks{Labels: map[string]v1alpha1.MarkValue{"rebooting": "true"}},
		AfterReboot:  &v1alpha1.AfterRebootMarks{Labels: map[string]v1alpha1.MarkValue{"rebooted": "true"}},
	}
	settle := &protocol.Settle{BootID: "boot-1", Since: t0}
	for name, tc := range map[string]struct {
		t    protocol.Transition
		keys []string
	}{
		"SetDesiredConfig":      {protocol.SetDesiredConfig("c2"), []string{protocol.DesiredConfig}},
		"OfferAPIRequests":      {protocol.OfferAPIRequests([]protocol.APIRequest{{Name: "nm"}}), []string{protocol.APIRequests}},
		"HoldAdmission":         {protocol.HoldAdmission(&protocol.Held{Message: "m"}), []string{protocol.AdmissionHeld}},
		"Admit":                 {protocol.Admit(admission), []string{protocol.Admitted, protocol.AdmissionHeld, protocol.Cordoned}},
		"Recordon":              {protocol.Recordon(), []string{protocol.Cordoned}},
		"Redrain":               {protocol.Redrain(), []string{protocol.Cordoned, protocol.Hook}},
		"Mark":                  {protocol.Mark(marking), []string{protocol.NodeMarks}},
		"Approve":               {protocol.Approve(admission, t0, false), []string{protocol.RebootApproved, protocol.Admitted, protocol.DrainForced}},
		"Approve forced":        {protocol.Approve(admission, t0, true), []string{protocol.RebootApproved, protocol.Admitted}},
		"RecordForcing":         {protocol.RecordForcing(protocol.DrainForcing{BootID: "boot-0"}), []string{protocol.DrainForced}},
		"Release":               {protocol.Release(), []string{protocol.Admitted, protocol.Cordoned, protocol.NodeMarks, protocol.Hook}},
		"Retry":                 {protocol.Retry(protocol.DrainRetrying{BootID: "boot-0"}), []string{protocol.Admitted, protocol.Cordoned, protocol.NodeMarks, protocol.Hook, protocol.DrainRetry}},
		"Abandon":               {protocol.Abandon(protocol.DrainFailure{BootID: "boot-0"}), []string{protocol.Admitted, protocol.Cordoned, protocol.NodeMarks, protocol.Hook, protocol.DrainRetry, protocol.DrainFailed}},
		"Complete":              {protocol.Complete(marking, settle), completeKeys(protocol.RebootUnconfirmed)},
		"CompleteWithoutDaemon": {protocol.CompleteWithoutDaemon(marking, settle), completeKeys()},
		"AwaitDaemon":           {protocol.AwaitDaemon(protocol.UnconfirmedReboot{ApprovedBoot: "boot-0"}), []string{protocol.RebootUnconfirmed}},
		"ForgetUnconfirmed":     {protocol.ForgetUnconfirmed(), []string{protocol.RebootUnconfirmed}},
		"TimeReturn":            {protocol.TimeReturn(admission, t0), []string{protocol.Admitted}},
		"MarkNotBack":           {protocol.MarkNotBack(protocol.NotBack{ApprovedBoot: "boot-0"}), []string{protocol.NodeNotBack}},
		"ForgetNotBack":         {protocol.ForgetNotBack(), []string{protocol.NodeNotBack}},
		"UpdateSettle":          {protocol.UpdateSettle(*settle), []string{protocol.Settling}},
		"Settled":               {protocol.Settled(), []string{protocol.Settling}},
		"RecordHooks":           {protocol.RecordHooks(protocol.HookRecord{Point: protocol.BeforeDrain}), []string{protocol.Hook}},
		"ForgetHooks":           {protocol.ForgetHooks(), []string{protocol.Hook}},
		"AdmitUnsilenced":       {protocol.AdmitUnsilenced(admission), []string{protocol.Admitted, protocol.AdmissionHeld}},
		"RecordSilences":        {protocol.RecordSilences(protocol.SilenceRecord{BootID: "boot-0"}), []string{protocol.Silenced}},
		"ForgetSilences":        {protocol.ForgetSilences(), []string{protocol.Silenced}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			// Every annotation the protocol knows, with a value no
			// transition writes, on a node kmaint cordoned and marked and
			// on one that is schedulable: between them each transition
			// writes every key it may.
			written := map[string]bool{}
			for _, cordoned := range []bool{true, false} {
				n := gen.Node("n", gen.BootID("boot-1"), gen.Labels("rebooting", "true"))
				for _, key := range everyKey {
					n.Annotations[key] = "before"
				}
				delete(n.Annotations, protocol.Cordoned)
				if cordoned {
					n.Spec.Unschedulable = true
					n.Annotations[protocol.Cordoned] = "true"
				}
				n.Annotations[protocol.NodeMarks] = protocol.Encode(protocol.Marks{Labels: map[string]protocol.MarkedLabel{"rebooting": {Value: "true"}}})
				before := n.DeepCopy()
				tc.t.Apply(n)
				for _, key := range everyKey {
					if before.Annotations[key] != n.Annotations[key] || hasKey(before, key) != hasKey(n, key) {
						written[key] = true
					}
				}
			}
			g.Expect(slices.Collect(maps.Keys(written))).To(ConsistOf(tc.keys))
		})
	}
}

// completeKeys are the keys Complete and CompleteWithoutDaemon write, and
// more.
func completeKeys(more ...string) []string {
	return append([]string{protocol.RebootApproved, protocol.Admitted, protocol.DrainFailed, protocol.NodeNotBack,
		protocol.DrainRetry, protocol.Hook, protocol.Cordoned, protocol.NodeMarks, protocol.Settling}, more...)
}

// everyKey is every annotation of the node protocol.
var everyKey = []string{
	protocol.RebootRequested, protocol.RebootApproved, protocol.DesiredConfig, protocol.CurrentConfig, protocol.State,
	protocol.Cordoned, protocol.Admitted, protocol.DrainFailed, protocol.DrainRetry, protocol.DrainForced,
	protocol.NodeMarks, protocol.RebootUnconfirmed, protocol.NodeNotBack, protocol.AdmissionHeld, protocol.APIRequests,
	protocol.Settling, protocol.Hook, protocol.Silenced,
}

func hasKey(n *corev1.Node, key string) bool { _, ok := n.Annotations[key]; return ok }

// kmaintKeys are the kmaint annotations on n, sorted.
func kmaintKeys(n *corev1.Node) []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range maps.Keys(n.Annotations) {
			if strings.HasPrefix(k, protocol.Prefix) && !yield(k) {
				return
			}
		}
	})
}

// Marks on and off: what the node had stays, what kmaint changed comes
// back, what someone changed meanwhile is theirs.
func TestMarksOnAndOff(t *testing.T) {
	g := NewWithT(t)
	n := gen.Node("n", gen.Labels("same", "v", "changed", "old", "taken", "x"))
	n.Spec.Taints = []corev1.Taint{{Key: "t-own", Effect: corev1.TaintEffectNoSchedule, Value: "mine"}}
	m := &v1alpha1.NodeMarking{DuringReboot: &v1alpha1.DuringRebootMarks{
		Labels: map[string]v1alpha1.MarkValue{"same": "v", "changed": "new", "added": "a", "taken": "y"},
		Taints: []v1alpha1.MarkTaint{{Key: "t-own", Effect: "NoSchedule"}, {Key: "t-new", Effect: "PreferNoSchedule", Value: "k"}},
	}, AfterReboot: &v1alpha1.AfterRebootMarks{Labels: map[string]v1alpha1.MarkValue{"after": "done"}}}
	protocol.Mark(m).Apply(n)
	g.Expect(n.Labels).To(Equal(map[string]string{"same": "v", "changed": "new", "added": "a", "taken": "y"}))
	g.Expect(n.Spec.Taints).To(ConsistOf(
		corev1.Taint{Key: "t-own", Effect: corev1.TaintEffectNoSchedule, Value: "mine"},
		corev1.Taint{Key: "t-new", Effect: corev1.TaintEffectPreferNoSchedule, Value: "k"}))
	var rec protocol.Marks
	_, err := protocol.Decode(n, protocol.NodeMarks, &rec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.Labels).To(HaveLen(3), "the node's own same-valued label is not recorded")
	g.Expect(rec.Taints).To(Equal([]protocol.MarkedTaint{{Key: "t-new", Value: "k", Effect: "PreferNoSchedule"}}))

	n.Labels["taken"] = "someone-else" // changed by a person mid-reboot
	protocol.Complete(m, nil).Apply(n)
	g.Expect(n.Labels).To(Equal(map[string]string{"same": "v", "changed": "old", "taken": "someone-else", "after": "done"}))
	g.Expect(n.Spec.Taints).To(Equal([]corev1.Taint{{Key: "t-own", Effect: corev1.TaintEffectNoSchedule, Value: "mine"}}))
	g.Expect(n.Annotations).NotTo(HaveKey(protocol.NodeMarks))

	// Letting go again, or of a node never marked, does nothing.
	before := n.DeepCopy()
	protocol.Release().Apply(n)
	g.Expect(n).To(Equal(before))
}

// Every annotation of the protocol has one writer: the operator or the
// daemon, never both, never neither.
func TestEachAnnotationHasOneWriter(t *testing.T) {
	g := NewWithT(t)
	writers := append(protocol.OperatorAnnotations(), protocol.DaemonAnnotations()...)
	g.Expect(writers).To(ConsistOf(everyKey))
}
