package hooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/metrics"
	"github.com/kmaint/kmaint/operator/poolnodes"
)

// Kind is one way a hook runs: a Job the operator makes (JobKind), a
// controller's acknowledgement on the Node (Acknowledgement). The runner
// asks a hook's kind, and nothing else, where an attempt stands, to begin
// one, and to end one. See the package's doc for adding a kind.
type Kind interface {
	// Runs reports whether the hook is of this kind: the field of
	// v1alpha1.Hook that selects it is set.
	Runs(h *v1alpha1.Hook) bool
	// Observe says where an attempt stands.
	Observe(ctx context.Context, a Attempt) (Observation, error)
	// Start begins an attempt Observe said was AttemptUnstarted, and returns its
	// handle, which the record keeps (a Job's UID); or why it cannot be
	// begun (refused), which fails the attempt. An error is tried again.
	Start(ctx context.Context, a Attempt) (handle string, refused *Refusal, err error)
	// Stop ends an attempt that may still run: its node was released, and
	// its work is for a reboot that is not coming. Its Hook may be nil (the
	// pool's hook is gone); there may be nothing to stop.
	Stop(ctx context.Context, a Attempt) error
}

// State is where one attempt of a hook stands.
type State int

// The states an attempt can be in.
const (
	// AttemptWaiting: neither passed nor failed.
	AttemptWaiting State = iota
	// AttemptUnstarted: the attempt asks to be begun (Kind.Start).
	AttemptUnstarted
	// AttemptPassed: the attempt passed.
	AttemptPassed
	// AttemptFailed: the attempt failed; Reason and Message say why.
	AttemptFailed
)

// Observation is what a hook's kind says of one attempt.
type Observation struct {
	State State
	// Reason and Message say why an attempt failed.
	Reason, Message string
}

// Subject is what a node's point is, as its hooks are told of it.
type Subject struct {
	Pool  string
	Node  *corev1.Node
	Point protocol.HookPoint
	// BootID and Token are those of the point (protocol.NodeState.HookTokenAt).
	BootID, Token string
	// Sources and Reasons are the node's requests', in their order.
	Sources, Reasons []string
	// DesiredConfig is the pool's desiredConfig, CurrentConfig what the
	// node's daemon says it runs.
	DesiredConfig, CurrentConfig string
	Now                          time.Time
}

// Attempt is one attempt of a hook at a subject's point.
type Attempt struct {
	Subject
	Hook     *v1alpha1.Hook
	Progress protocol.HookProgress
}

// Runner runs a point's hooks through their kinds.
type Runner struct {
	kinds []Kind
	// live reads a node past every cache, for the At calls: whether the
	// API server holds the record a decision read (NodeRecord.Current).
	live client.Reader
}

// NewRunner returns a runner over kinds; a hook that none of them runs
// fails at once.
func NewRunner(kinds ...Kind) *Runner { return &Runner{kinds: kinds} }

func (r *Runner) kindOf(h *v1alpha1.Hook) Kind {
	for _, k := range r.kinds {
		if k.Runs(h) {
			return k
		}
	}
	return nil
}

// Decide is Decide, the kinds observing each attempt; Input.Observe is
// set here.
func (r *Runner) Decide(ctx context.Context, s Subject, in Input) (Decision, error) {
	var errs []error
	in.Observe = func(h *v1alpha1.Hook, p protocol.HookProgress) Observation {
		k := r.kindOf(h)
		if k == nil {
			return Observation{State: AttemptFailed, Reason: ReasonNotStarted, Message: fmt.Sprintf("hook %s has no kind this operator runs", h.Name)}
		}
		o, err := k.Observe(ctx, Attempt{Subject: s, Hook: h, Progress: p})
		errs = append(errs, err)
		return o
	}
	d := Decide(in)
	return d, errors.Join(errs...)
}

// Start begins the attempts a decision asks for, and returns the record to
// write: each begun attempt with its handle, each refused one failed with
// its refusal (Decision.Started). specs are the point's hooks.
func (r *Runner) Start(ctx context.Context, s Subject, specs []v1alpha1.Hook, d *Decision) (protocol.HookRecord, error) {
	started, refused := map[string]string{}, map[string]Refusal{}
	var errs []error
	for _, name := range d.Start {
		h, p := hookNamed(specs, name), progressNamed(d.Record, name)
		if h == nil || p == nil {
			continue
		}
		k := r.kindOf(h)
		if k == nil {
			refused[name] = Refusal{Reason: ReasonNotStarted, Message: fmt.Sprintf("hook %s has no kind this operator runs", name)}
			continue
		}
		handle, why, err := k.Start(ctx, Attempt{Subject: s, Hook: h, Progress: *p})
		switch {
		case err != nil:
			errs = append(errs, err)
		case why != nil:
			refused[name] = *why
		default:
			started[name] = handle
		}
	}
	if err := errors.Join(errs...); err != nil {
		return protocol.HookRecord{}, err
	}
	return d.Started(specs, started, refused, s.Now), nil
}

// Stop ends every attempt of the record that may still run (begun, not
// passed), once the node it ran for was released. An attempt that shows no
// handle may have begun all the same: the record that says so is written
// after the kind began it, and that write can fail.
func (r *Runner) Stop(ctx context.Context, rec *protocol.HookRecord) error {
	if rec == nil {
		return nil
	}
	var errs []error
	for _, p := range rec.Hooks {
		if p.Attempt == 0 || !p.Passed.IsZero() {
			continue
		}
		a := Attempt{Subject: Subject{Pool: rec.Pool, Point: rec.Point, BootID: rec.BootID, Token: rec.Token}, Progress: p}
		for _, k := range r.kinds {
			errs = append(errs, k.Stop(ctx, a))
		}
	}
	return errors.Join(errs...)
}

// Named returns the hook of specs named name; nil when there is none.
func Named(specs []v1alpha1.Hook, name string) *v1alpha1.Hook { return hookNamed(specs, name) }

func progressNamed(rec protocol.HookRecord, name string) *protocol.HookProgress {
	for i := range rec.Hooks {
		if rec.Hooks[i].Name == name {
			return &rec.Hooks[i]
		}
	}
	return nil
}

func hookNamed(specs []v1alpha1.Hook, name string) *v1alpha1.Hook {
	for i := range specs {
		if specs[i].Name == name {
			return &specs[i]
		}
	}
	return nil
}

// Acknowledgement is the kind of a hook another controller opens: it passes
// when the node carries hooks.kmaint.io/<name> valued with the point's
// token (protocol.Acknowledged). Nothing is begun or ended.
type Acknowledgement struct{}

// Runs reports whether the hook is an acknowledgement.
func (Acknowledgement) Runs(h *v1alpha1.Hook) bool { return h.Acknowledgement != nil }

// Observe: passed once the node carries the acknowledgement.
func (Acknowledgement) Observe(_ context.Context, a Attempt) (Observation, error) {
	if protocol.Acknowledged(a.Node, a.Hook.Name, a.Token) {
		return Observation{State: AttemptPassed}, nil
	}
	return Observation{State: AttemptWaiting}, nil
}

// Start has nothing to begin.
func (Acknowledgement) Start(context.Context, Attempt) (string, *Refusal, error) { return "", nil, nil }

// Stop has nothing to end.
func (Acknowledgement) Stop(context.Context, Attempt) error { return nil }

// Outcome is where a node stands at a point, once its hooks were run.
type Outcome int

const (
	// OutcomeWaiting: a hook neither passed nor failed for good.
	OutcomeWaiting Outcome = iota
	// OutcomePassed: every hook at the point passed (or there are none).
	OutcomePassed
	// OutcomeHalted: a hook failed for good and halts the pool; the node
	// keeps its slot where it is.
	OutcomeHalted
	// OutcomeReleased: a hook failed for good and its onFailure lets the
	// node go; the caller releases it.
	OutcomeReleased
)

// Outcome says where the decision leaves the node.
func (d Decision) Outcome() Outcome {
	switch f := d.Record.Failed(); {
	case f != nil && f.Failure.Halts():
		return OutcomeHalted
	case f != nil:
		return OutcomeReleased
	case d.Record.Passed():
		return OutcomePassed
	}
	return OutcomeWaiting
}

// Run runs the point's hooks (in.Hooks) for the subject, the whole of one
// reconcile's work at the point: it decides where the node stands (decide)
// and does what the decision asks (apply). A point whose pool has no hooks
// (any longer) passes; a record of it that waits is removed. An operator
// killed at any moment finds the same attempts, deadlines and handles (see
// the package's doc).
func (r *Runner) Run(ctx context.Context, s Subject, in Input, node NodeRecord, tell func([]Event)) (Decision, error) {
	d, err := r.decide(ctx, s, in)
	if err != nil {
		return Decision{}, err
	}
	return r.apply(ctx, s, in, d, node, tell)
}

// NodeRecord is how a controller keeps a node's hook record. Write records
// where the node stands (through protocol.WriteHooks; nil removes the
// record), applied only to the version of the node the decision read.
// Current reports whether the record the decision read is still the one
// the API server holds.
type NodeRecord struct {
	Write   func(*protocol.HookRecord) error
	Current func() (bool, error)
}

// decide is Decide for the subject, the kinds observing; a point without
// hooks passes, and its record, if one waits, is to be removed.
func (r *Runner) decide(ctx context.Context, s Subject, in Input) (Decision, error) {
	if len(in.Hooks) == 0 {
		stale := in.Record != nil && in.Record.Point == in.Point && !in.Record.Passed()
		return Decision{Passed: true, Record: protocol.HookRecord{Point: in.Point}, Write: stale}, nil
	}
	return r.Decide(ctx, s, in)
}

// apply does what decide decided: it writes where the node stands
// (node.Write) before it begins an attempt or a failure is acted on, tells
// what happened once the write that holds it is made (tell), begins the
// attempts the decision asks for, and writes and tells again.
//
// An attempt the decision begins on a record it did not write (one
// written begun, its handle not yet: an operator died, or a kind failed to
// begin it) begins only once the API server holds that same record: read
// from a cache behind the write of the attempt's handle, the record would
// begin again an attempt whose Job, gone since, may have run.
func (r *Runner) apply(ctx context.Context, s Subject, in Input, d Decision, node NodeRecord, tell func([]Event)) (Decision, error) {
	if d.Write {
		rec := &d.Record
		if len(in.Hooks) == 0 {
			rec = nil
		}
		if err := node.Write(rec); err != nil {
			return Decision{}, err
		}
	}
	tell(d.Events)
	if len(d.Start) == 0 {
		return d, nil
	}
	if !d.Write {
		current, err := node.Current()
		if err != nil || !current {
			// The node's next version, as the cache gets it, wakes its
			// controller to decide again.
			d.Start = nil
			return d, err
		}
	}
	told := len(d.Events)
	rec, err := r.Start(ctx, s, in.Hooks, &d)
	if err != nil {
		return Decision{}, err
	}
	if err := node.Write(&rec); err != nil {
		return Decision{}, err
	}
	tell(d.Events[told:])
	return d, nil
}

// Acts reports whether the decision asks for something to be written or
// begun (apply); false when the node stands where its record says.
func (d Decision) Acts() bool { return d.Write || len(d.Start) > 0 }

// Teller tells what happened to a node's hooks: events on the node (and
// the pool, for a failure), a log line and the metrics. The gate, which runs
// the hooks before the reboot, and aftercare, which runs those after it,
// tell alike.
type Teller struct {
	Events  poolnodes.Events
	Metrics *metrics.Recorder
}

// At is a node at one of its pool's hook points.
type At struct {
	Pool  *v1alpha1.MaintenancePool
	Node  protocol.NodeState
	Point protocol.HookPoint
	// BootID is the boot the point is for: the admitted one before the
	// reboot, the new one after it.
	BootID string
	Now    time.Time
}

// RunAt runs the pool's hooks at the node's point (Run), telling what
// happened through t; write keeps the node's record (NodeRecord.Write).
func (r *Runner) RunAt(ctx context.Context, t Teller, at At, write func(*protocol.HookRecord) error) (Decision, error) {
	d, err := r.DecideAt(ctx, at)
	if err != nil {
		return Decision{}, err
	}
	return r.ApplyAt(ctx, t, at, d, write)
}

// DecideAt is where the node stands in the hooks of its point, the kinds
// observing each attempt; nothing is written or begun.
func (r *Runner) DecideAt(ctx context.Context, at At) (Decision, error) {
	return r.decide(ctx, at.subject(), at.input())
}

// ApplyAt does what d, DecideAt's decision for at, asks (Run's writes and
// attempts), telling what happened through t; write keeps the node's
// record, and the runner reads the node past every cache for
// NodeRecord.Current.
func (r *Runner) ApplyAt(ctx context.Context, t Teller, at At, d Decision, write func(*protocol.HookRecord) error) (Decision, error) {
	node := NodeRecord{Write: write, Current: r.recordCurrent(ctx, at.Node.Node)}
	return r.apply(ctx, at.subject(), at.input(), d, node, func(events []Event) { t.tell(ctx, at, events) })
}

// recordCurrent is NodeRecord.Current for the node as a controller read
// it: whether the API server holds the same hook record. A runner without
// a live reader cannot tell, and says so: the attempt waits.
func (r *Runner) recordCurrent(ctx context.Context, node *corev1.Node) func() (bool, error) {
	return func() (bool, error) {
		if r.live == nil {
			return false, fmt.Errorf("node %s's hook record cannot be read past the cache: no live reader", node.Name)
		}
		var now corev1.Node
		if err := r.live.Get(ctx, client.ObjectKeyFromObject(node), &now); err != nil {
			return false, fmt.Errorf("read node %s's hook record: %w", node.Name, err)
		}
		return now.Annotations[protocol.Hook] == node.Annotations[protocol.Hook], nil
	}
}

// input is what Decide reads of the node's point.
func (at At) input() Input {
	resumeAt, _ := at.Pool.ResumeHaltTime(at.Now) // aftercare reports an unusable one
	return Input{Now: at.Now, Point: at.Point, Pool: at.Pool.Name, BootID: at.BootID, Token: at.Node.HookTokenAt(at.Point, at.BootID),
		Hooks: at.Pool.Spec.Hooks.At(string(at.Point)), Record: at.Node.Hook, ResumeAt: resumeAt}
}

// subject is the node's point as its hooks are told of it.
func (at At) subject() Subject {
	n := at.Node
	s := Subject{Pool: at.Pool.Name, Node: n.Node, Point: at.Point, BootID: at.BootID, Token: n.HookTokenAt(at.Point, at.BootID),
		DesiredConfig: at.Pool.Spec.DesiredConfig, CurrentConfig: n.CurrentConfig, Now: at.Now}
	if n.Admission != nil {
		for _, src := range n.Admission.Sources {
			s.Sources = append(s.Sources, string(src))
		}
		s.Reasons = n.Admission.Reasons
	}
	return s
}

// tell tells events of the node's hooks at its point.
func (t Teller) tell(ctx context.Context, at At, events []Event) {
	node, pool, point := at.Node.Node, at.Pool, at.Point
	log := ctrl.LoggerFrom(ctx).WithValues("node", node.Name, "point", point)
	for _, e := range events {
		switch e.Kind {
		case Started:
			log.Info("Hook started", "hook", e.Hook, "attempt", e.Attempt)
			t.Events.Node(pool, node, corev1.EventTypeNormal, string(e.Kind), "Hook",
				"Node %s waits for hook %s (%s), attempt %d", node.Name, e.Hook, point, e.Attempt)
		case Passed:
			log.Info("Hook passed", "hook", e.Hook, "attempt", e.Attempt, "took", e.Took)
			t.Metrics.HookFinished(pool.Name, string(point), e.Hook, "passed", e.Took)
			t.Events.Node(pool, node, corev1.EventTypeNormal, string(e.Kind), "Hook",
				"Node %s passed hook %s (%s) in %s", node.Name, e.Hook, point, e.Took.Round(time.Second))
		case Failed:
			log.Info("Hook failed", "hook", e.Hook, "attempt", e.Attempt, "reason", e.Reason, "message", e.Message, "again", e.Again)
			t.Metrics.HookFinished(pool.Name, string(point), e.Hook, "failed", e.Took)
			t.Metrics.HookFailed(pool.Name, string(point), e.Hook, e.Reason)
			then := "it runs again"
			if !e.Again {
				then = failureThen(pool, point, e.Hook)
			}
			t.Events.Both(pool, node, corev1.EventTypeWarning, string(e.Kind), "Hook",
				"Node %s failed hook %s (%s) at attempt %d: %s: %s; %s", node.Name, e.Hook, point, e.Attempt, e.Reason, e.Message, then)
		}
	}
}

// failureThen says what a hook's failure for good does.
func failureThen(pool *v1alpha1.MaintenancePool, point protocol.HookPoint, name string) string {
	h := Named(pool.Spec.Hooks.At(string(point)), name)
	switch {
	case h != nil && h.FailurePolicy() == v1alpha1.HookRelease && point == protocol.AfterReboot:
		return "the node is released as it is"
	case h != nil && h.FailurePolicy() == v1alpha1.HookRelease:
		return "the node is released and its requests fail"
	}
	return fmt.Sprintf("the node keeps its slot and pool %s is halted until it is resumed (kubectl kmaint resume %s), which runs the hook again", pool.Name, pool.Name)
}
