package hooks

import (
	"fmt"
	"slices"
	"time"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Input is what Decide decides from.
type Input struct {
	Now   time.Time
	Point protocol.HookPoint
	// Pool is the pool that admitted the node, whose hooks these are.
	Pool string
	// BootID and Token are those of the point the node is at
	// (protocol.NodeState.HookTokenAt).
	BootID, Token string
	// Hooks are the pool's hooks at the point.
	Hooks []v1alpha1.Hook
	// Record is the node's record; nil when it has none.
	Record *protocol.HookRecord
	// Observe says where an attempt of a hook stands, as the hook's kind
	// sees it (Runner.Decide asks the kinds).
	Observe func(h *v1alpha1.Hook, p protocol.HookProgress) Observation
	// ResumeAt is the pool's kmaint.io/resume-halt; zero when none. A
	// failure that halts at or before it runs its hook again.
	ResumeAt time.Time
}

// EventKind is what happened to a hook.
type EventKind string

// The kinds of event, each an Event reason of its own.
const (
	Started EventKind = "HookStarted"
	Passed  EventKind = "HookPassed"
	Failed  EventKind = "HookFailed"
)

// Event is one thing that happened to a hook in a decision, to be told
// once the record that holds it is written.
type Event struct {
	Kind    EventKind
	Hook    string
	Attempt int32
	// Reason and Message say why a hook failed.
	Reason, Message string
	// Took is how long the attempt ran, for a hook that passed or failed.
	Took time.Duration
	// Again is true for a failure whose hook runs again (Retry) and for a
	// start of an attempt after the first.
	Again bool
}

// Decision is what Decide decided.
type Decision struct {
	// Record is the node's record as it should be; Write is true when it
	// differs from Input.Record.
	Record protocol.HookRecord
	Write  bool
	// Start names the hooks whose attempt is to be begun (Kind.Start),
	// once the record is written.
	Start []string
	// Passed is true when every hook at the point passed.
	Passed bool
	// Failed is the first hook whose failure stands; nil when none does.
	Failed *protocol.HookProgress
	// Events happened in this decision.
	Events []Event
	// Wake is the earliest deadline of a hook still waiting; zero when none.
	Wake time.Time
}

// Reasons of a hook's failure.
const (
	ReasonTimeout    = "HookTimeout"
	ReasonJobFailed  = "HookJobFailed"
	ReasonJobLost    = "HookJobLost"
	ReasonNotStarted = "HookJobNotStarted"
	// ReasonJobNotOurs: a Job of the attempt's name existed when the gate
	// came to make it, and it is not the one the gate would have made.
	ReasonJobNotOurs = "HookJobNotOurs"
)

// Refusal is why an attempt's Job was not started: its reason (one of the
// reasons above) and what happened.
type Refusal struct {
	Reason, Message string
}

// Decide finds where the node stands in the point's hooks.
func Decide(in Input) Decision {
	var d Decision
	fresh := in.Record == nil || in.Record.Token != in.Token || in.Record.Point != in.Point
	rec := protocol.HookRecord{Pool: in.Pool, Point: in.Point, BootID: in.BootID, Token: in.Token, Since: in.Now}
	had := map[string]protocol.HookProgress{}
	switch {
	case !fresh:
		// A record of this point: its pool too stays as written, the
		// empty one of a record written before records named it
		// (HookTokenAt keeps its token while it names none).
		rec.Pool, rec.Since, rec.Earlier = in.Record.Pool, in.Record.Since, in.Record.Earlier
		for _, p := range in.Record.Hooks {
			had[p.Name] = p
		}
	case in.Record != nil && in.Record.Point.Before(in.Point) && in.Record.Passed() && len(in.Record.Earlier) < 2:
		// The node moved on from a point of its admission it passed (a
		// record left from another admission is removed when it ends):
		// its stretch is kept for the NodeMaintenance. There are three
		// points, so never more than two before this one.
		rec.Earlier = in.Record.Stretches()
	}
	for i := range in.Hooks {
		h := &in.Hooks[i]
		p, ok := had[h.Name]
		if !ok {
			p = d.begin(h, 1, in.Now)
		}
		p = d.step(in, h, p)
		rec.Hooks = append(rec.Hooks, p)
	}
	d.Record = rec
	// Compared as written: what is stored is what counts.
	d.Write = fresh || protocol.Encode(rec) != protocol.Encode(*in.Record)
	d.Passed = rec.Passed()
	d.Failed = rec.Failed()
	if d.Failed != nil {
		// What failed for good decides; the rest waits with it.
		d.Start = nil
	}
	return d
}

// begin starts an attempt of a hook.
func (d *Decision) begin(h *v1alpha1.Hook, attempt int32, now time.Time) protocol.HookProgress {
	d.Events = append(d.Events, Event{Kind: Started, Hook: h.Name, Attempt: attempt, Again: attempt > 1})
	return protocol.HookProgress{Name: h.Name, Attempt: attempt, Since: now, Deadline: now.Add(h.TimeoutOrDefault())}
}

// step moves one hook on; a hook that failed and runs again asks for its
// next attempt to begin at once.
func (d *Decision) step(in Input, h *v1alpha1.Hook, p protocol.HookProgress) protocol.HookProgress {
	attempt := p.Attempt
	p = d.move(in, h, p)
	if p.Attempt != attempt && p.Failure == nil && p.Passed.IsZero() && !slices.Contains(d.Start, h.Name) &&
		in.Observe(h, p).State == AttemptUnstarted {
		d.Start = append(d.Start, h.Name)
	}
	return p
}

func (d *Decision) move(in Input, h *v1alpha1.Hook, p protocol.HookProgress) protocol.HookProgress {
	if !p.Passed.IsZero() {
		return p
	}
	if p.Failure != nil {
		// The resume names failures by the second, as status.halt lists them.
		if !p.Failure.Halts() || in.ResumeAt.IsZero() || in.ResumeAt.Before(p.Failure.Time.Truncate(time.Second)) {
			return p
		}
		// A person resumed the pool after this failure: the hook runs
		// again.
		p = d.begin(h, p.Attempt+1, in.Now)
	}
	switch o := in.Observe(h, p); o.State {
	case AttemptUnstarted:
		if in.Now.Before(p.Deadline) {
			d.Start = append(d.Start, h.Name)
		}
	case AttemptPassed:
		return d.pass(p, in.Now)
	case AttemptFailed:
		return d.Fail(h, p, o.Reason, o.Message, in.Now)
	}
	if !in.Now.Before(p.Deadline) {
		return d.Fail(h, p, ReasonTimeout, fmt.Sprintf("not passed within %s", h.TimeoutOrDefault()), in.Now)
	}
	if d.Wake.IsZero() || p.Deadline.Before(d.Wake) {
		d.Wake = p.Deadline
	}
	return p
}

func (d *Decision) pass(p protocol.HookProgress, now time.Time) protocol.HookProgress {
	p.Passed = now
	d.Events = append(d.Events, Event{Kind: Passed, Hook: p.Name, Attempt: p.Attempt, Took: now.Sub(p.Since)})
	return p
}

// Fail fails an attempt of a hook: the hook runs again at once while its
// retries last, and its failure stands after them. The message (a Job's,
// the API server's refusal of a template) is cut to a request reason's
// bound: it is kept on the Node, within the annotation's.
func (d *Decision) Fail(h *v1alpha1.Hook, p protocol.HookProgress, reason, message string, now time.Time) protocol.HookProgress {
	message = v1alpha1.FitReason(message)
	again := p.Attempt < h.MaxAttempts()
	d.Events = append(d.Events, Event{Kind: Failed, Hook: h.Name, Attempt: p.Attempt, Reason: reason, Message: message, Took: now.Sub(p.Since), Again: again})
	if again {
		return d.begin(h, p.Attempt+1, now)
	}
	policy := h.FailurePolicy()
	if policy == v1alpha1.HookRetry {
		policy = v1alpha1.HookHalt
	}
	p.Failure = &protocol.HookFailure{Reason: reason, Message: message, Time: now, OnFailure: string(policy)}
	return p
}

// Started records the outcome of beginning the attempts a decision asked
// for: each begun attempt started at now with its handle, a Job's UID
// (started, by hook), and each refused one failed with its refusal's
// reason, never passed. It returns the record to write.
func (d *Decision) Started(hooks []v1alpha1.Hook, started map[string]string, refused map[string]Refusal, now time.Time) protocol.HookRecord {
	rec := d.Record
	rec.Hooks = append([]protocol.HookProgress(nil), rec.Hooks...)
	for i, p := range rec.Hooks {
		if !slices.Contains(d.Start, p.Name) {
			continue
		}
		if uid, ok := started[p.Name]; ok {
			rec.Hooks[i].JobStarted, rec.Hooks[i].JobUID = now, uid
			continue
		}
		why, bad := refused[p.Name]
		if !bad {
			continue
		}
		for j := range hooks {
			if hooks[j].Name == p.Name {
				rec.Hooks[i] = d.Fail(&hooks[j], p, why.Reason, why.Message, now)
			}
		}
	}
	d.Record = rec
	return rec
}
