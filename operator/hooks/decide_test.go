package hooks_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/hooks"
)

var t0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

func job(name string) v1alpha1.Hook {
	return v1alpha1.Hook{Name: name, Timeout: &metav1.Duration{Duration: time.Minute}, Job: &v1alpha1.HookJob{}}
}

func ack(name string) v1alpha1.Hook {
	return v1alpha1.Hook{Name: name, Timeout: &metav1.Duration{Duration: time.Minute}, Acknowledgement: &v1alpha1.HookAcknowledgement{}}
}

// input is a decision at now for the hooks, the record as given, and each
// attempt as seen says, as the kinds would see it (waiting when unsaid): a
// Job hook's attempt whose Job was not made yet is unstarted.
func input(now time.Time, specs []v1alpha1.Hook, rec *protocol.HookRecord, seen map[string]hooks.Observation) hooks.Input {
	return hooks.Input{
		Now: now, Point: protocol.BeforeReboot, BootID: "boot-0", Token: "tok", Hooks: specs, Record: rec,
		Observe: func(h *v1alpha1.Hook, p protocol.HookProgress) hooks.Observation {
			if h.Job != nil && p.JobStarted.IsZero() {
				return hooks.Observation{State: hooks.AttemptUnstarted}
			}
			return seen[h.Name]
		},
	}
}

// lostJob is how the Job kind sees an attempt whose Job is gone, or was
// made again by someone else.
var lostJob = hooks.Observation{State: hooks.AttemptFailed, Reason: hooks.ReasonJobLost, Message: "Job gone"}

func TestDecide(t *testing.T) {
	g := NewWithT(t)

	// A point reached: the record first, then the Jobs.
	d := hooks.Decide(input(t0, []v1alpha1.Hook{job("stage"), ack("db")}, nil, nil))
	g.Expect(d.Write).To(BeTrue())
	g.Expect(d.Start).To(Equal([]string{"stage"}))
	g.Expect(d.Record.Waiting()).To(Equal([]string{"stage", "db"}))
	g.Expect(d.Record.Hooks[0].Deadline).To(Equal(t0.Add(time.Minute)))
	g.Expect(d.Wake).To(Equal(t0.Add(time.Minute)))

	// An operator that died before it recorded the Job asks for it again
	// (the name is the same, so the API server has the one made); one that
	// recorded it waits for it.
	again := hooks.Decide(input(t0.Add(time.Second), []v1alpha1.Hook{job("stage"), ack("db")}, &d.Record, nil))
	g.Expect(again.Write).To(BeFalse())
	g.Expect(again.Start).To(Equal([]string{"stage"}))
	rec := d.Started([]v1alpha1.Hook{job("stage"), ack("db")}, map[string]string{"stage": "uid-1"}, nil, t0)
	g.Expect(rec.Hooks[0].JobStarted).To(Equal(t0))
	g.Expect(rec.Hooks[0].JobUID).To(Equal("uid-1"))
	waiting := hooks.Decide(input(t0.Add(time.Second), []v1alpha1.Hook{job("stage"), ack("db")}, &rec, nil))
	g.Expect(waiting.Write).To(BeFalse())
	g.Expect(waiting.Start).To(BeEmpty())

	// A Job of its name that is not the one made fails its hook: what it
	// says counts for nothing.
	replaced := hooks.Decide(input(t0.Add(time.Second), []v1alpha1.Hook{job("stage")}, &rec, map[string]hooks.Observation{"stage": lostJob}))
	g.Expect(replaced.Passed).To(BeFalse())
	g.Expect(replaced.Failed.Failure.Reason).To(Equal(hooks.ReasonJobLost))

	// A recorded Job that is gone fails its hook, and is not made again.
	lost := hooks.Decide(input(t0.Add(time.Second), []v1alpha1.Hook{job("stage")}, &rec, map[string]hooks.Observation{"stage": lostJob}))
	g.Expect(lost.Start).To(BeEmpty())
	g.Expect(lost.Failed).NotTo(BeNil())
	g.Expect(lost.Failed.Failure.Reason).To(Equal(hooks.ReasonJobLost))
	g.Expect(lost.Failed.Failure.Halts()).To(BeTrue(), "Halt is the default")

	// Past its deadline a hook fails, whatever its Job is doing.
	late := hooks.Decide(input(t0.Add(time.Minute), []v1alpha1.Hook{job("stage")}, &rec, nil))
	g.Expect(late.Failed.Failure.Reason).To(Equal(hooks.ReasonTimeout))

	// A hook removed from the pool is waited for no more; one passed stays
	// passed.
	done := hooks.Decide(input(t0.Add(2*time.Second), []v1alpha1.Hook{job("stage")}, &rec, map[string]hooks.Observation{"stage": {State: hooks.AttemptPassed}}))
	g.Expect(done.Passed).To(BeTrue())
	g.Expect(done.Record.Hooks).To(HaveLen(1))
	g.Expect(done.Events[0].Kind).To(Equal(hooks.Passed))

	// Another token (another boot, admission or point) starts over.
	other := input(t0.Add(time.Hour), []v1alpha1.Hook{job("stage")}, &done.Record, nil)
	other.Token = "tok2"
	fresh := hooks.Decide(other)
	g.Expect(fresh.Passed).To(BeFalse())
	g.Expect(fresh.Start).To(Equal([]string{"stage"}))
	g.Expect(fresh.Record.Token).To(Equal("tok2"))
}

func TestDecideFailures(t *testing.T) {
	g := NewWithT(t)
	retry := job("stage")
	retry.OnFailure = v1alpha1.HookRetry
	retry.Retries = new(int32(1))
	specs := []v1alpha1.Hook{retry}
	d := hooks.Decide(input(t0, specs, nil, nil))
	rec := d.Started(specs, map[string]string{"stage": "uid-1"}, nil, t0)

	// The first failure runs it again at once, as attempt 2.
	first := hooks.Decide(input(t0.Add(time.Second), specs, &rec, map[string]hooks.Observation{"stage": {State: hooks.AttemptFailed, Reason: hooks.ReasonJobFailed, Message: "exit 1"}}))
	g.Expect(first.Failed).To(BeNil())
	g.Expect(first.Record.Hooks[0].Attempt).To(BeEquivalentTo(2))
	g.Expect(first.Start).To(Equal([]string{"stage"}))

	// A Job the API server refuses fails its attempt too; past the retries
	// the failure stands and halts.
	rec = first.Started(specs, nil, map[string]hooks.Refusal{"stage": {Reason: hooks.ReasonNotStarted, Message: "quota exceeded"}}, t0.Add(time.Second))
	g.Expect(first.Record.Failed()).NotTo(BeNil())
	g.Expect(rec.Hooks[0].Failure.Reason).To(Equal(hooks.ReasonNotStarted))
	g.Expect(rec.Hooks[0].Failure.OnFailure).To(Equal("Halt"))

	// A resume at or after the failure's second runs it again; one before
	// does not.
	before := input(t0.Add(time.Minute), specs, &rec, nil)
	before.ResumeAt = t0
	g.Expect(hooks.Decide(before).Failed).NotTo(BeNil())
	after := input(t0.Add(time.Minute), specs, &rec, nil)
	after.ResumeAt = t0.Add(time.Second)
	resumed := hooks.Decide(after)
	g.Expect(resumed.Failed).To(BeNil())
	g.Expect(resumed.Record.Hooks[0].Attempt).To(BeEquivalentTo(3))
	g.Expect(resumed.Start).To(Equal([]string{"stage"}))

	// However long the API server's refusal, the record keeps a bounded
	// message: it lives in a Node annotation.
	halt := []v1alpha1.Hook{job("stage")}
	long := hooks.Decide(input(t0, halt, nil, nil))
	rec = long.Started(halt, nil, map[string]hooks.Refusal{"stage": {Reason: hooks.ReasonNotStarted, Message: strings.Repeat("invalid field; ", 10000)}}, t0)
	g.Expect(len(rec.Hooks[0].Failure.Message)).To(BeNumerically("<=", v1alpha1.MaxReasonLength))

	// Release's failure stands without halting, and no resume lifts it.
	release := ack("db")
	release.OnFailure = v1alpha1.HookRelease
	r := hooks.Decide(input(t0, []v1alpha1.Hook{release}, nil, nil))
	gone := input(t0.Add(time.Minute), []v1alpha1.Hook{release}, &r.Record, nil)
	gone.ResumeAt = t0.Add(time.Hour)
	out := hooks.Decide(gone)
	g.Expect(out.Failed).NotTo(BeNil())
	g.Expect(out.Failed.Failure.Halts()).To(BeFalse())
}

// The record of a point replaces the last one's; the stretches of the
// admission's earlier points go with it, so that its NodeMaintenance
// keeps them even when its controller saw only the later point.
func TestDecideKeepsTheEarlierPointsStretches(t *testing.T) {
	g := NewWithT(t)
	drain := input(t0, []v1alpha1.Hook{ack("db")}, nil, map[string]hooks.Observation{"db": {State: hooks.AttemptPassed}})
	drain.Point = protocol.BeforeDrain
	drained := hooks.Decide(drain)
	g.Expect(drained.Passed).To(BeTrue())
	g.Expect(drained.Record.Earlier).To(BeEmpty())

	reboot := hooks.Decide(input(t0.Add(time.Minute), []v1alpha1.Hook{job("stage")}, &drained.Record, nil))
	g.Expect(reboot.Record.Point).To(Equal(protocol.BeforeReboot))
	g.Expect(reboot.Record.Earlier).To(Equal([]protocol.HookStretch{{Point: protocol.BeforeDrain, BootID: "boot-0", Hooks: []string{"db"}, Since: t0, Passed: t0}}))
	// Later decisions at the point keep them.
	rec := reboot.Started([]v1alpha1.Hook{job("stage")}, map[string]string{"stage": "uid-1"}, nil, t0.Add(time.Minute))
	passed := hooks.Decide(input(t0.Add(2*time.Minute), []v1alpha1.Hook{job("stage")}, &rec, map[string]hooks.Observation{"stage": {State: hooks.AttemptPassed}}))
	g.Expect(passed.Record.Earlier).To(HaveLen(1))
	g.Expect(passed.Record.Stretches()).To(Equal([]protocol.HookStretch{
		{Point: protocol.BeforeDrain, BootID: "boot-0", Hooks: []string{"db"}, Since: t0, Passed: t0},
		{Point: protocol.BeforeReboot, BootID: "boot-0", Hooks: []string{"stage"}, Since: t0.Add(time.Minute), Passed: t0.Add(2 * time.Minute)},
	}))

	// A point not passed, or one that does not come before (a record left
	// from another admission), is not carried.
	waiting := hooks.Decide(input(t0.Add(time.Minute), []v1alpha1.Hook{job("stage")}, &reboot.Record, nil))
	after := input(t0.Add(3*time.Minute), []v1alpha1.Hook{job("check")}, &waiting.Record, nil)
	after.Point, after.Token = protocol.AfterReboot, "tok-after"
	g.Expect(hooks.Decide(after).Record.Earlier).To(BeEmpty(), "beforeReboot did not pass")
	back := input(t0.Add(3*time.Minute), []v1alpha1.Hook{ack("db")}, &passed.Record, nil)
	back.Point, back.Token = protocol.BeforeDrain, "tok-next"
	g.Expect(hooks.Decide(back).Record.Earlier).To(BeEmpty(), "beforeDrain does not follow beforeReboot")
}
