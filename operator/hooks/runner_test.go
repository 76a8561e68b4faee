package hooks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/hooks"
)

// fakeKind runs the hooks whose name it is given, as a kind of its own:
// each attempt as seen says, each start as starts says.
type fakeKind struct {
	names   map[string]bool
	seen    map[string]hooks.Observation
	starts  map[string]string
	refuse  map[string]hooks.Refusal
	fail    error
	stopped []string
}

func (k *fakeKind) Runs(h *v1alpha1.Hook) bool { return k.names[h.Name] }

func (k *fakeKind) Observe(_ context.Context, a hooks.Attempt) (hooks.Observation, error) {
	if o, ok := k.seen[a.Hook.Name]; ok {
		return o, nil
	}
	return hooks.Observation{State: hooks.AttemptUnstarted}, nil
}

func (k *fakeKind) Start(_ context.Context, a hooks.Attempt) (string, *hooks.Refusal, error) {
	if r, ok := k.refuse[a.Hook.Name]; ok {
		return "", &r, nil
	}
	return k.starts[a.Hook.Name], nil, k.fail
}

func (k *fakeKind) Stop(_ context.Context, a hooks.Attempt) error {
	k.stopped = append(k.stopped, protocol.HookJobName(a.Progress.Name, a.Token, a.Progress.Attempt))
	return nil
}

func subject() hooks.Subject {
	return hooks.Subject{Pool: "p", Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, Point: protocol.BeforeReboot,
		BootID: "boot-0", Token: "tok", Now: t0}
}

func hook(name string) v1alpha1.Hook {
	return v1alpha1.Hook{Name: name, Timeout: &metav1.Duration{Duration: time.Minute}}
}

// The runner asks each hook's own kind; a hook no kind runs fails at once.
func TestTheRunnerAsksEachHooksKind(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	a := &fakeKind{names: map[string]bool{"a": true}, starts: map[string]string{"a": "handle-a"}}
	b := &fakeKind{names: map[string]bool{"b": true}, seen: map[string]hooks.Observation{"b": {State: hooks.AttemptPassed}}}
	r := hooks.NewRunner(a, b)
	specs := []v1alpha1.Hook{hook("a"), hook("b"), hook("orphan")}
	in := hooks.Input{Now: t0, Point: protocol.BeforeReboot, Pool: "p", BootID: "boot-0", Token: "tok", Hooks: specs}

	d, err := r.Decide(ctx, subject(), in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Record.Hooks[1].Passed).To(Equal(t0), "b's kind says it passed")
	g.Expect(d.Failed).NotTo(BeNil())
	g.Expect(d.Failed.Name).To(Equal("orphan"))
	g.Expect(d.Failed.Failure.Message).To(ContainSubstring("no kind"))
	g.Expect(d.Start).To(BeEmpty(), "a failure stands: nothing is begun")

	// Without the orphan, a's kind says a is to begin.
	d, err = r.Decide(ctx, subject(), hooks.Input{Now: t0, Point: protocol.BeforeReboot, Pool: "p", BootID: "boot-0", Token: "tok", Hooks: specs[:2]})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Start).To(Equal([]string{"a"}))
	rec, err := r.Start(ctx, subject(), specs[:2], &d)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.Hooks[0].JobUID).To(Equal("handle-a"))
	g.Expect(rec.Hooks[0].JobStarted).To(Equal(t0))
}

// A kind's refusal fails the attempt; an error of a kind records nothing,
// to try again.
func TestTheRunnerRecordsRefusalsAndRetriesErrors(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	k := &fakeKind{names: map[string]bool{"a": true, "b": true}, starts: map[string]string{"b": "handle-b"},
		refuse: map[string]hooks.Refusal{"a": {Reason: hooks.ReasonNotStarted, Message: "quota"}}}
	r := hooks.NewRunner(k)
	specs := []v1alpha1.Hook{hook("a"), hook("b")}
	d, err := r.Decide(ctx, subject(), hooks.Input{Now: t0, Point: protocol.BeforeReboot, Pool: "p", BootID: "boot-0", Token: "tok", Hooks: specs})
	g.Expect(err).NotTo(HaveOccurred())
	rec, err := r.Start(ctx, subject(), specs, &d)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.Hooks[0].Failure).NotTo(BeNil())
	g.Expect(rec.Hooks[0].Failure.Message).To(Equal("quota"))
	g.Expect(rec.Hooks[1].JobUID).To(Equal("handle-b"))

	k.fail = errors.New("connection refused")
	d, err = r.Decide(ctx, subject(), hooks.Input{Now: t0, Point: protocol.BeforeReboot, Pool: "p", BootID: "boot-0", Token: "tok", Hooks: specs[1:]})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = r.Start(ctx, subject(), specs[1:], &d)
	g.Expect(err).To(MatchError(ContainSubstring("connection refused")))
}

// Stop asks every kind to end every attempt begun and not passed: the
// pool's hook may be gone, and with it what kind it was.
func TestTheRunnerStopsEveryAttemptThatMayStillRun(t *testing.T) {
	g := NewWithT(t)
	a, b := &fakeKind{}, &fakeKind{}
	rec := &protocol.HookRecord{Token: "tok", Hooks: []protocol.HookProgress{
		{Name: "running", Attempt: 2}, {Name: "passed", Attempt: 1, Passed: t0}, {Name: "never", Attempt: 0},
	}}
	g.Expect(hooks.NewRunner(a, b).Stop(context.Background(), rec)).To(Succeed())
	want := []string{protocol.HookJobName("running", "tok", 2)}
	g.Expect(a.stopped).To(Equal(want))
	g.Expect(b.stopped).To(Equal(want))
	g.Expect(hooks.NewRunner(a).Stop(context.Background(), nil)).To(Succeed(), "no record, nothing to stop")
}

// Run writes where the node stands before it begins an attempt, tells
// what happened only after the write that holds it, and writes the begun
// attempt's handle; a point whose pool has no hooks any longer passes, and
// a record of it that waits is removed.
func TestRunWritesBeforeItBeginsAndTellsAfterItWrites(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var order []string
	k := &fakeKind{names: map[string]bool{"a": true}, starts: map[string]string{"a": "handle-a"}}
	r := hooks.NewRunner(k)
	var written []protocol.HookRecord
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{}}}
	write := func(rec *protocol.HookRecord) error {
		protocol.WriteHooks(rec)(node)
		st, err := protocol.Read(node)
		if err != nil {
			return err
		}
		if st.Hook != nil {
			written = append(written, *st.Hook)
			order = append(order, "write")
		} else {
			order = append(order, "forget")
		}
		return nil
	}
	tell := func(events []hooks.Event) {
		for _, e := range events {
			order = append(order, "tell "+string(e.Kind))
		}
	}
	current := func() (bool, error) { return true, nil }
	specs := []v1alpha1.Hook{hook("a")}
	in := hooks.Input{Now: t0, Point: protocol.BeforeReboot, Pool: "p", BootID: "boot-0", Token: "tok", Hooks: specs}
	d, err := r.Run(ctx, subject(), in, hooks.NodeRecord{Write: write, Current: current}, tell)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Outcome()).To(Equal(hooks.OutcomeWaiting))
	g.Expect(order).To(Equal([]string{"write", "tell HookStarted", "write"}))
	g.Expect(written).To(HaveLen(2))
	g.Expect(written[0].Hooks[0].JobUID).To(BeEmpty(), "the attempt is written before it begins")
	g.Expect(written[1].Hooks[0].JobUID).To(Equal("handle-a"))

	// The pool's hooks are gone: the waiting record goes, the point passes.
	order = nil
	in.Hooks, in.Record = nil, &written[1]
	d, err = r.Run(ctx, subject(), in, hooks.NodeRecord{Write: write, Current: current}, tell)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Outcome()).To(Equal(hooks.OutcomePassed))
	g.Expect(order).To(Equal([]string{"forget"}))

	// A kind that cannot begin an attempt now: the first write stands,
	// nothing more is written or told, and the error is returned.
	order, written = nil, nil
	k.fail = errors.New("connection refused")
	in.Hooks, in.Record = specs, nil
	_, err = r.Run(ctx, subject(), in, hooks.NodeRecord{Write: write, Current: current}, tell)
	g.Expect(err).To(MatchError(ContainSubstring("connection refused")))
	g.Expect(order).To(Equal([]string{"write", "tell HookStarted"}))
}

// An attempt written begun, its handle not yet, begins only once the API
// server holds that record: read from a cache behind the write of its
// handle, the record would make again a Job that is gone and may have run.
func TestAnAttemptBegunOnARecordItDidNotWriteBeginsOnlyOnACurrentOne(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	k := &fakeKind{names: map[string]bool{"a": true}, starts: map[string]string{"a": "handle-a"}}
	r := hooks.NewRunner(k)
	begun := protocol.HookRecord{Pool: "p", Point: protocol.BeforeReboot, BootID: "boot-0", Token: "tok", Since: t0,
		Hooks: []protocol.HookProgress{{Name: "a", Attempt: 1, Since: t0, Deadline: t0.Add(time.Minute)}}}
	in := hooks.Input{Now: t0.Add(time.Second), Point: protocol.BeforeReboot, Pool: "p", BootID: "boot-0", Token: "tok",
		Hooks: []v1alpha1.Hook{hook("a")}, Record: &begun}
	var writes int
	isCurrent := false
	node := hooks.NodeRecord{
		Write:   func(*protocol.HookRecord) error { writes++; return nil },
		Current: func() (bool, error) { return isCurrent, nil },
	}
	tell := func([]hooks.Event) {}

	d, err := r.Run(ctx, subject(), in, node, tell)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Start).To(BeEmpty(), "a record the API server no longer holds begins nothing")
	g.Expect(writes).To(BeZero())

	isCurrent = true
	d, err = r.Run(ctx, subject(), in, node, tell)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Start).To(Equal([]string{"a"}), "the same record, current: the attempt begins")
	g.Expect(writes).To(Equal(1), "and its handle is written")

	_, err = r.Run(ctx, subject(), in, hooks.NodeRecord{Write: node.Write, Current: func() (bool, error) { return false, errors.New("timeout") }}, tell)
	g.Expect(err).To(MatchError(ContainSubstring("timeout")), "a record that cannot be read begins nothing")
}
