package gate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/operator/hooks"
)

// hookOutcome is where a node stands at a point of its path.
type hookOutcome int

const (
	// hookWaiting: a hook neither passed nor failed for good.
	hookWaiting hookOutcome = iota
	// hookPassed: every hook at the point passed (or there are none).
	hookPassed
	// hookHalted: a hook failed for good and halts the pool; the node
	// keeps its slot where it is.
	hookHalted
	// hookReleased: a hook failed for good and its onFailure lets the node
	// go; the caller releases it.
	hookReleased
)

// atHooks runs the pool's hooks at point for the node: it writes where the
// node stands (protocol.RecordHooks) before it makes a Job or acts on a
// failure, then makes the Jobs the point asks for, and tells the events.
// bootID is the boot the point is for: the admitted one before the reboot,
// the new one after it.
func (r *Reconciler) atHooks(ctx context.Context, st *poolState, v *nodeView, point protocol.HookPoint, bootID string) (hookOutcome, error) {
	specs := st.pool.Spec.Hooks.At(string(point))
	if len(specs) == 0 {
		// The pool has none (any longer): a record of the point waits for
		// nothing.
		if v.Hook != nil && v.Hook.Point == point && !v.Hook.Passed() {
			_, err := r.patchNode(ctx, st, v, true, protocol.ForgetHooks())
			return hookPassed, err
		}
		return hookPassed, nil
	}
	resumeAt, _ := st.pool.ResumeHaltTime(st.now) // aftercare reports an unusable one
	token := v.HookTokenAt(point, bootID)
	var lookupErr error
	d := hooks.Decide(hooks.Input{
		Now: st.now, Point: point, Pool: st.pool.Name, BootID: bootID, Token: token, Hooks: specs, Record: v.Hook, ResumeAt: resumeAt,
		Acked: func(hook string) bool { return protocol.Acknowledged(v.Node, hook, token) },
		Job: func(hook string, p protocol.HookProgress) hooks.Job {
			j, err := r.hookJob(ctx, protocol.HookJobName(hook, token, p.Attempt), p.JobUID)
			lookupErr = errors.Join(lookupErr, err)
			return j
		},
	})
	if lookupErr != nil {
		return hookWaiting, lookupErr
	}
	st.wakeAt(d.Wake)
	if d.Write {
		if _, err := r.patchNode(ctx, st, v, true, protocol.RecordHooks(d.Record)); err != nil {
			return hookWaiting, err
		}
		v = st.view(v.Node.Name)
	}
	r.tellHooks(ctx, st, v, point, d.Events)
	if len(d.Start) > 0 {
		events := len(d.Events)
		started, refused, err := r.startJobs(ctx, st, v, point, bootID, token, specs, d)
		if err != nil {
			return hookWaiting, err
		}
		rec := d.Started(specs, started, refused, st.now)
		if _, err := r.patchNode(ctx, st, v, true, protocol.RecordHooks(rec)); err != nil {
			return hookWaiting, err
		}
		r.tellHooks(ctx, st, v, point, d.Events[events:])
	}
	switch f := d.Record.Failed(); {
	case f != nil && f.Failure.Halts():
		return hookHalted, nil
	case f != nil:
		return hookReleased, nil
	case d.Record.Passed():
		return hookPassed, nil
	}
	return hookWaiting, nil
}

// hookJob reads an attempt's Job. The cache may not have a Job made a
// moment ago: a Job it does not have is looked up in the API before it is
// taken for gone, which fails its hook. One whose UID is not uid (the one
// made for the attempt) is not it.
func (r *Reconciler) hookJob(ctx context.Context, name, uid string) (hooks.Job, error) {
	key := types.NamespacedName{Namespace: r.HooksNamespace, Name: name}
	var job batchv1.Job
	err := r.Get(ctx, key, &job)
	if apierrors.IsNotFound(err) {
		err = r.apiReader.Get(ctx, key, &job)
	}
	switch {
	case apierrors.IsNotFound(err):
		return hooks.Job{Phase: hooks.JobMissing}, nil
	case err != nil:
		return hooks.Job{}, fmt.Errorf("get hook Job %s: %w", key, err)
	case uid != "" && string(job.UID) != uid:
		return hooks.Job{Phase: hooks.JobReplaced}, nil
	}
	return hooks.PhaseOf(&job), nil
}

// startJobs makes the Jobs a decision asks for, and returns their UIDs
// by hook. A Job the API server refuses (its template invalid, its
// namespace missing, a quota or a pod security level in the way) is
// returned as refused: its hook fails, never passes. A Job that exists
// already is taken only if it is the one the gate would have made
// (adoptJob); else it is refused too. Any other error is returned, to try
// again.
func (r *Reconciler) startJobs(ctx context.Context, st *poolState, v *nodeView, point protocol.HookPoint, bootID, token string, specs []v1alpha1.Hook, d hooks.Decision) (started map[string]string, refused map[string]hooks.Refusal, err error) {
	started, refused = map[string]string{}, map[string]hooks.Refusal{}
	var errs []error
	for _, name := range d.Start {
		h, p := hookNamed(specs, name), progressNamed(d.Record, name)
		if h == nil || p == nil {
			continue
		}
		if r.HooksNamespace == "" {
			refused[name] = hooks.Refusal{Reason: hooks.ReasonNotStarted, Message: "the operator runs no hook Jobs: it was started without --hooks-namespace"}
			continue
		}
		c := hooks.JobContext{
			Namespace: r.HooksNamespace, Pool: st.pool.Name, Node: v.Node.Name, Point: point, BootID: bootID, Token: token,
			Attempt: p.Attempt, DesiredConfig: st.pool.Spec.DesiredConfig, CurrentConfig: v.CurrentConfig,
			Deadline: p.Deadline, Now: st.now, ServiceAccount: r.HookServiceAccount, PriorityClass: r.HookPriorityClass,
		}
		if v.Admission != nil {
			for _, s := range v.Admission.Sources {
				c.Sources = append(c.Sources, string(s))
			}
			c.Reasons = v.Admission.Reasons
		}
		job := hooks.NewJob(h, c)
		err := r.Create(ctx, job)
		var notOurs string
		if apierrors.IsAlreadyExists(err) {
			job, notOurs, err = r.adoptJob(ctx, job, h, p)
		}
		switch {
		case err == nil && notOurs != "":
			ctrl.LoggerFrom(ctx).Info("Hook Job not ours", "node", v.Node.Name, "hook", name, "point", point, "job", job.Name, "why", notOurs)
			refused[name] = hooks.Refusal{Reason: hooks.ReasonJobNotOurs, Message: fmt.Sprintf(
				"Job %s/%s existed before kmaint made it, and is not the one kmaint makes for the attempt (%s): whoever made it may run anything in it, so what it says counts for nothing; it is left for a person to look at",
				r.HooksNamespace, job.Name, notOurs)}
		case err == nil:
			ctrl.LoggerFrom(ctx).Info("Hook Job made", "node", v.Node.Name, "hook", name, "point", point, "job", job.Name, "attempt", p.Attempt)
			started[name] = string(job.UID)
		case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsNotFound(err), apierrors.IsBadRequest(err):
			refused[name] = hooks.Refusal{Reason: hooks.ReasonNotStarted, Message: fmt.Sprintf("Job %s/%s could not be made: %v", r.HooksNamespace, job.Name, err)}
		default:
			errs = append(errs, fmt.Errorf("make hook Job %s/%s: %w", r.HooksNamespace, job.Name, err))
		}
	}
	return started, refused, errors.Join(errs...)
}

// adoptJob reads the Job of want's name, which exists already, and says
// why it is not the one the gate makes for the attempt ("" when it is).
// The gate meets its own when it made the Job and its record of it was
// not written (the operator died, or the node changed meanwhile). But a
// hook Job's name is computed from what any reader of Nodes sees, so a
// Job made first by someone else, running anything, would otherwise pass
// the hook: only the operator may make Jobs in the hooks namespace
// (config/admission), and this holds where that policy is missing.
//
// Its labels and annotations must be want's, and its spec what the API
// server makes of want's: the gate asks it with a dry run of want under
// another name (its defaults, and what admission adds, are the API
// server's to say, not a copy here to drift from it), and compares the
// two but for what the API server derives from the Job's own name and
// UID (the selector and the pod labels that carry them) and the deadline
// (counted from when each was made). A Job that the record names by UID
// must have that UID. A legitimate Job made before the pool's template or
// desiredConfig changed is not taken either: its hook fails, and what it
// ran is for a person to judge.
func (r *Reconciler) adoptJob(ctx context.Context, want *batchv1.Job, h *v1alpha1.Hook, p *protocol.HookProgress) (*batchv1.Job, string, error) {
	have := &batchv1.Job{}
	if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
		// Gone in between: the next pass makes it, or finds it.
		return want, "", fmt.Errorf("get hook Job %s/%s, which exists: %w", want.Namespace, want.Name, err)
	}
	if p.JobUID != "" && string(have.UID) != p.JobUID {
		return have, fmt.Sprintf("its UID is %s, the record's %s", have.UID, p.JobUID), nil
	}
	probe := want.DeepCopy()
	probe.Name, probe.GenerateName = "", want.Name
	if err := r.Create(ctx, probe, client.DryRunAll); err != nil {
		return have, "", fmt.Errorf("dry run of hook Job %s/%s, to compare it with the one that exists: %w", want.Namespace, want.Name, err)
	}
	return have, notTheJob(have, probe, h.TimeoutOrDefault()), nil
}

// notTheJob says how have differs from made, what the API server made of
// the Job the gate would make ("" when it does not).
func notTheJob(have, made *batchv1.Job, timeout time.Duration) string {
	switch {
	case !maps.Equal(have.Labels, made.Labels):
		return "its labels differ"
	case !maps.Equal(have.Annotations, made.Annotations):
		return "its annotations differ"
	case !validDeadline(have.Spec.ActiveDeadlineSeconds, timeout):
		return "its activeDeadlineSeconds is not within the hook's timeout"
	}
	h, m := comparableSpec(have), comparableSpec(made)
	if !equality.Semantic.DeepEqual(h.Template, m.Template) {
		return "its pod template differs"
	}
	if !equality.Semantic.DeepEqual(h, m) {
		return "its spec differs"
	}
	return ""
}

// validDeadline: the gate gives a Job the time left of its attempt, at
// least a second, never more than the hook's timeout.
func validDeadline(s *int64, timeout time.Duration) bool {
	return s != nil && *s >= 1 && *s <= int64(math.Ceil(timeout.Seconds()))
}

// comparableSpec is a Job's spec without what the API server derives
// from the Job's own name and UID, and without its deadline. With no
// manual selector, the API server makes the selector and these labels
// itself, whatever the Job says.
func comparableSpec(job *batchv1.Job) batchv1.JobSpec {
	s := *job.Spec.DeepCopy()
	s.ActiveDeadlineSeconds = nil
	if s.ManualSelector == nil || !*s.ManualSelector {
		s.Selector = nil
		// The API server sets both the labels and their legacy forms.
		for _, k := range []string{batchv1.ControllerUidLabel, batchv1.JobNameLabel, "controller-uid", "job-name"} {
			delete(s.Template.Labels, k)
		}
	}
	return s
}

// tellHooks tells what happened to the node's hooks: events, a log line
// and the metrics.
func (r *Reconciler) tellHooks(ctx context.Context, st *poolState, v *nodeView, point protocol.HookPoint, events []hooks.Event) {
	log := ctrl.LoggerFrom(ctx).WithValues("node", v.Node.Name, "point", point)
	for _, e := range events {
		switch e.Kind {
		case hooks.Started:
			log.Info("Hook started", "hook", e.Hook, "attempt", e.Attempt)
			r.events.Node(st.pool, v.Node, corev1.EventTypeNormal, string(e.Kind), "Hook",
				"Node %s waits for hook %s (%s), attempt %d", v.Node.Name, e.Hook, point, e.Attempt)
		case hooks.Passed:
			log.Info("Hook passed", "hook", e.Hook, "attempt", e.Attempt, "took", e.Took)
			r.Metrics.HookFinished(st.pool.Name, string(point), e.Hook, "passed", e.Took)
			r.events.Node(st.pool, v.Node, corev1.EventTypeNormal, string(e.Kind), "Hook",
				"Node %s passed hook %s (%s) in %s", v.Node.Name, e.Hook, point, e.Took.Round(time.Second))
		case hooks.Failed:
			log.Info("Hook failed", "hook", e.Hook, "attempt", e.Attempt, "reason", e.Reason, "message", e.Message, "again", e.Again)
			r.Metrics.HookFinished(st.pool.Name, string(point), e.Hook, "failed", e.Took)
			r.Metrics.HookFailed(st.pool.Name, string(point), e.Hook, e.Reason)
			then := "it runs again"
			if !e.Again {
				then = hookThen(st.pool, point, e.Hook)
			}
			r.events.Both(st.pool, v.Node, corev1.EventTypeWarning, string(e.Kind), "Hook",
				"Node %s failed hook %s (%s) at attempt %d: %s: %s; %s", v.Node.Name, e.Hook, point, e.Attempt, e.Reason, e.Message, then)
		}
	}
}

// hookThen says what a hook's failure for good does.
func hookThen(pool *v1alpha1.MaintenancePool, point protocol.HookPoint, name string) string {
	h := hookNamed(pool.Spec.Hooks.At(string(point)), name)
	switch {
	case h != nil && h.FailurePolicy() == v1alpha1.HookRelease && point == protocol.AfterReboot:
		return "the node is released as it is"
	case h != nil && h.FailurePolicy() == v1alpha1.HookRelease:
		return "the node is released and its requests fail"
	}
	return fmt.Sprintf("the node keeps its slot and pool %s is halted until it is resumed (kubectl kmaint resume %s), which runs the hook again", pool.Name, pool.Name)
}

func hookNamed(specs []v1alpha1.Hook, name string) *v1alpha1.Hook {
	for i := range specs {
		if specs[i].Name == name {
			return &specs[i]
		}
	}
	return nil
}

func progressNamed(rec protocol.HookRecord, name string) *protocol.HookProgress {
	for i := range rec.Hooks {
		if rec.Hooks[i].Name == name {
			return &rec.Hooks[i]
		}
	}
	return nil
}

// hookPassedAt is when the node passed its hooks at point (before its
// reboot) for its admission, from when a drain after them is timed: the
// last hook's pass. Zero when it is not at the point, or no pass is
// recorded (the pool's hooks there were removed).
func hookPassedAt(v *nodeView, point protocol.HookPoint) time.Time {
	if v.Hook == nil || v.Hook.Point != point || v.Admission == nil || v.Hook.Token != v.HookTokenAt(point, v.Admission.BootID) {
		return time.Time{}
	}
	var last time.Time
	for _, h := range v.Hook.Hooks {
		if h.Passed.After(last) {
			last = h.Passed
		}
	}
	return last
}

// drainStart is when the node's drain began: at its admission, or once
// its beforeDrain hooks passed.
func (st *poolState) drainStart(v *nodeView) time.Time {
	if t := hookPassedAt(v, protocol.BeforeDrain); t.After(v.Admission.Time) {
		return t
	}
	return v.Admission.Time
}

// drainedForHooks reports whether the node reached its beforeReboot hooks
// for its admission: its drain was done. It goes on stepping while the
// node waits there (drain), so that a pod that lands on it meanwhile (one
// that tolerates the cordon, or is bound to the node by name) is evicted
// before the reboot, its PodDisruptionBudget holding.
func drainedForHooks(v *nodeView) bool {
	return v.Hook != nil && v.Hook.Point == protocol.BeforeReboot && v.Admission != nil &&
		v.Hook.Token == v.HookTokenAt(protocol.BeforeReboot, v.Admission.BootID)
}

// beforeReboot runs the beforeReboot hooks of a drained node, and approves
// its reboot once they passed, its approval fits the budget, and, if it
// waited at them (waited; not when its drain ended in this pass), once a
// drain taken again after they passed finds it drained: a hook may take
// minutes, and a pod that landed meanwhile (one that tolerates the cordon,
// or is bound to the node by name) is evicted before the reboot, its
// PodDisruptionBudget holding, not killed by it. While the node waits at
// its hooks its drain goes on, and evicts such pods as they land.
func (r *Reconciler) beforeReboot(ctx context.Context, st *poolState, v *nodeView, mayApprove bool, used int, waited bool) error {
	outcome, err := r.atHooks(ctx, st, v, protocol.BeforeReboot, v.Admission.BootID)
	if err != nil {
		return err
	}
	v = st.view(v.Node.Name)
	var redrain *drainReport
	var last drain.StepResult
	if waited {
		key := drain.KeyOf(v.Node.Name, v.Admission.BootID, v.Admission.Time)
		if outcome == hookPassed {
			key = key.AfterHooks()
		}
		var stepped bool
		last, stepped = r.steps.Follow(key, st.pool.Name, st.pool.Spec.Drain)
		if outcome == hookPassed {
			redrain = redrainReport(last, stepped)
		}
	}
	timeout := drainTimeout(st.pool)
	switch {
	case outcome != hookPassed:
		return r.heldByHooks(ctx, st, v, outcome)
	case redrain != nil && pastDeadlineAfterHooks(v, last, st.now, timeout):
		// The drain after the hooks is a drain like the first: the pool's
		// timeout, counted from when they passed, and drain.onTimeout.
		r.steps.Stop(v.Node.Name)
		return r.atDeadline(ctx, st, v, timeout, last.Progress, last.Err, mayApprove)
	case !mayApprove:
		st.drains[v.Node.Name] = drainReport{blocked: true, message: fmt.Sprintf(
			"drained and its beforeReboot hooks passed; its approval waits: %d nodes count against a maxUnavailable of %d", used, st.admission.budget)}
		return nil
	case redrain != nil:
		st.drains[v.Node.Name] = drainReport{blocked: redrain.blocked,
			message: "its beforeReboot hooks passed; its approval waits for the drain to find it drained again: " + redrain.message}
		return nil
	}
	return r.approve(ctx, st, v, forcedRecord(v))
}

// pastDeadlineAfterHooks reports whether the drain taken again after the
// node's beforeReboot hooks passed is past the pool's timeout, counted from
// their last pass. Only a step's finding is past it: a drain whose first
// step is under way is not. A node whose hooks were taken out of its pool
// while it waited has no passes recorded: the record goes, and from the
// next pass on its drain is the first one again, timed from its admission.
func pastDeadlineAfterHooks(v *nodeView, last drain.StepResult, now time.Time, timeout time.Duration) bool {
	passed := hookPassedAt(v, protocol.BeforeReboot)
	return !last.At.IsZero() && !passed.IsZero() && now.Sub(passed) >= timeout
}

// redrainReport is nil when the drain's last step, taken a moment ago,
// found the node drained; else it says where the drain stands.
func redrainReport(last drain.StepResult, stepped bool) *drainReport {
	switch {
	case !stepped:
		return &drainReport{message: "its first step is under way"}
	case last.Err == nil && last.Progress.Done && last.Stale:
		return &drainReport{message: "looking once more"}
	case last.Err == nil && last.Progress.Done:
		return nil
	}
	rep := report(last.Progress, last.Err)
	return &rep
}

// heldByHooks reports a node its hooks hold before its reboot, in the
// pool's Draining condition, and releases one whose hook's failure lets it
// go: uncordoned, its requests failed with the hook's reason (as an
// abandoned drain fails them), so that they are not admitted again.
func (r *Reconciler) heldByHooks(ctx context.Context, st *poolState, v *nodeView, outcome hookOutcome) error {
	msg := "its hooks have not passed"
	if v.Hook != nil {
		msg = v.Hook.Describe()
	}
	if outcome != hookReleased {
		st.drains[v.Node.Name] = drainReport{message: msg, blocked: outcome == hookHalted}
		return nil
	}
	failure := protocol.DrainFailure{BootID: v.Admission.BootID, Requests: v.Admission.Requests, Time: st.now, Reason: v1alpha1.HookFailedReason, Message: msg}
	if cur := v.Current(); cur != nil && cur.BootID == v.Admission.BootID {
		failure.Requests = cur.IDs()
	}
	r.steps.Stop(v.Node.Name)
	rec := v.Hook
	if _, err := r.patchNode(ctx, st, v, true, protocol.Abandon(failure)); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Released for a failed hook", "node", v.Node.Name, "message", msg)
	return r.stopHookJobs(ctx, rec)
}

// stopHookJobs deletes the Jobs a record made that may still run, once the
// node they ran for was released: their work is for a reboot that is not
// coming. Their pods go with them. An attempt the record began but shows no
// Job for may have one all the same: the Job is made after the attempt is
// written, and the write that says so can fail (the node changed meanwhile,
// as when its request is withdrawn). Its name is the attempt's, so it is
// deleted too; there may be none.
func (r *Reconciler) stopHookJobs(ctx context.Context, rec *protocol.HookRecord) error {
	if rec == nil || r.HooksNamespace == "" {
		return nil
	}
	var errs []error
	for _, h := range rec.Hooks {
		if h.Attempt == 0 || !h.Passed.IsZero() {
			continue
		}
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: r.HooksNamespace, Name: protocol.HookJobName(h.Name, rec.Token, h.Attempt)}}
		if err := r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("delete hook Job %s/%s: %w", job.Namespace, job.Name, err))
		}
	}
	return errors.Join(errs...)
}
