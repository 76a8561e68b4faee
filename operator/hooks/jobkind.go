package hooks

import (
	"context"
	"fmt"
	"maps"
	"math"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// JobKind is the kind of a hook that runs a Job the operator makes in its
// hooks namespace (NewJob), one per attempt, named from the point's token,
// the hook and the attempt (protocol.HookJobName): made once, never made
// again once it was, its outcome read from its conditions.
type JobKind struct {
	// Client reads Jobs from the operator's cache, and makes and deletes
	// them.
	Client client.Client
	// APIReader reads from the API server what the cache may not have yet.
	APIReader client.Reader
	JobSettings
}

// JobSettings say where and how the hooks' Jobs run.
type JobSettings struct {
	// Namespace is where the Jobs run; empty runs none: a Job hook fails
	// at its first attempt, saying why.
	Namespace string
	// ServiceAccount and PriorityClass are what the Jobs' pods run under
	// (JobContext).
	ServiceAccount, PriorityClass string
}

// NewRunnerOf returns the runner over every kind of hook kmaint has: the
// one the controllers that run hooks (the gate before the reboot,
// aftercare after it) each make. c reads Jobs from the cache and makes
// them; apiReader reads what the cache does not have yet.
func NewRunnerOf(c client.Client, apiReader client.Reader, jobs JobSettings) *Runner {
	r := NewRunner(&JobKind{Client: c, APIReader: apiReader, JobSettings: jobs}, Acknowledgement{})
	r.live = apiReader
	return r
}

// JobPool maps a hook's Job in namespace to the pool it runs for, so that
// a Job that finishes wakes its node's pool.
func JobPool(namespace string) handler.MapFunc {
	return func(_ context.Context, o client.Object) []reconcile.Request {
		pool := o.GetAnnotations()[PoolAnnotation]
		if o.GetNamespace() != namespace || o.GetLabels()[ManagedByLabel] != "kmaint" || pool == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: pool}}}
	}
}

// Runs reports whether the hook runs a Job.
func (k *JobKind) Runs(h *v1alpha1.Hook) bool { return h.Job != nil }

// Observe reads the attempt's Job: Unstarted until it was made, then its
// outcome. The cache may not have a Job made a moment ago: one it does not
// have is looked up in the API before it is taken for gone, which fails
// the attempt; so does a Job of the name whose UID is not the one made for
// it.
func (k *JobKind) Observe(ctx context.Context, a Attempt) (Observation, error) {
	p := a.Progress
	if p.JobStarted.IsZero() {
		return Observation{State: AttemptUnstarted}, nil
	}
	name := protocol.HookJobName(a.Hook.Name, a.Token, p.Attempt)
	key := types.NamespacedName{Namespace: k.Namespace, Name: name}
	var job batchv1.Job
	err := k.Client.Get(ctx, key, &job)
	if apierrors.IsNotFound(err) {
		err = k.APIReader.Get(ctx, key, &job)
	}
	switch {
	case apierrors.IsNotFound(err):
		return Observation{State: AttemptFailed, Reason: ReasonJobLost, Message: fmt.Sprintf(
			"Job %s was made and is gone before kmaint saw it finish; it is not made again, since it may have run", name)}, nil
	case err != nil:
		return Observation{}, fmt.Errorf("get hook Job %s: %w", key, err)
	case p.JobUID != "" && string(job.UID) != p.JobUID:
		return Observation{State: AttemptFailed, Reason: ReasonJobLost, Message: fmt.Sprintf(
			"Job %s is not the one kmaint made (uid %s): it was deleted and made again by someone else, and what it says counts for nothing", name, p.JobUID)}, nil
	}
	return PhaseOf(&job), nil
}

// Start makes the attempt's Job. One the API server refuses (its template
// invalid, its namespace missing, a quota or a pod security level in the
// way) is refused: its hook fails, never passes. A Job that exists already
// is taken only if it is the one kmaint would have made (adopt); else it
// is refused too. Any other error is returned, to try again.
func (k *JobKind) Start(ctx context.Context, a Attempt) (string, *Refusal, error) {
	if k.Namespace == "" {
		return "", &Refusal{Reason: ReasonNotStarted, Message: "the operator runs no hook Jobs: it was started without --hooks-namespace"}, nil
	}
	c := JobContext{
		Namespace: k.Namespace, Pool: a.Pool, Node: a.Node.Name, Point: a.Point, BootID: a.BootID, Token: a.Token,
		Attempt: a.Progress.Attempt, Sources: a.Sources, Reasons: a.Reasons, DesiredConfig: a.DesiredConfig, CurrentConfig: a.CurrentConfig,
		Deadline: a.Progress.Deadline, Now: a.Now, ServiceAccount: k.ServiceAccount, PriorityClass: k.PriorityClass,
	}
	job := NewJob(a.Hook, c)
	err := k.Client.Create(ctx, job)
	var notOurs string
	if apierrors.IsAlreadyExists(err) {
		job, notOurs, err = k.adopt(ctx, job, a.Hook, a.Progress)
	}
	log := ctrl.LoggerFrom(ctx).WithValues("node", a.Node.Name, "hook", a.Hook.Name, "point", a.Point, "job", job.Name)
	switch {
	case err == nil && notOurs != "":
		log.Info("Hook Job not ours", "why", notOurs)
		return "", &Refusal{Reason: ReasonJobNotOurs, Message: fmt.Sprintf(
			"Job %s/%s existed before kmaint made it, and is not the one kmaint makes for the attempt (%s): whoever made it may run anything in it, so what it says counts for nothing; it is left for a person to look at",
			k.Namespace, job.Name, notOurs)}, nil
	case err == nil:
		log.Info("Hook Job made", "attempt", a.Progress.Attempt)
		return string(job.UID), nil, nil
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsNotFound(err), apierrors.IsBadRequest(err):
		return "", &Refusal{Reason: ReasonNotStarted, Message: fmt.Sprintf("Job %s/%s could not be made: %v", k.Namespace, job.Name, err)}, nil
	}
	return "", nil, fmt.Errorf("make hook Job %s/%s: %w", k.Namespace, job.Name, err)
}

// Stop deletes the attempt's Job, which may not exist; its pods go with
// it.
func (k *JobKind) Stop(ctx context.Context, a Attempt) error {
	if k.Namespace == "" {
		return nil
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: protocol.HookJobName(a.Progress.Name, a.Token, a.Progress.Attempt)}}
	if err := k.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete hook Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}

// adopt reads the Job of want's name, which exists already, and says why
// it is not the one kmaint makes for the attempt ("" when it is). kmaint
// meets its own when it made the Job and its record of it was not written
// (the operator died, or the node changed meanwhile). But a hook Job's
// name is computed from what any reader of Nodes sees, so a Job made first
// by someone else, running anything, would otherwise pass the hook: only
// the operator may make Jobs in the hooks namespace (config/admission),
// and this holds where that policy is missing.
//
// Its labels and annotations must be want's, and its spec what the API
// server makes of want's: it is asked with a dry run of want under another
// name (its defaults, and what admission adds, are the API server's to
// say, not a copy here to drift from it), and the two are compared but for
// what the API server derives from the Job's own name and UID (the
// selector and the pod labels that carry them) and the deadline (counted
// from when each was made). A Job that the record names by UID must have
// that UID. A legitimate Job made before the pool's template or
// desiredConfig changed is not taken either: its hook fails, and what it
// ran is for a person to judge.
func (k *JobKind) adopt(ctx context.Context, want *batchv1.Job, h *v1alpha1.Hook, p protocol.HookProgress) (*batchv1.Job, string, error) {
	have := &batchv1.Job{}
	if err := k.APIReader.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
		// Gone in between: the next pass makes it, or finds it.
		return want, "", fmt.Errorf("get hook Job %s/%s, which exists: %w", want.Namespace, want.Name, err)
	}
	if p.JobUID != "" && string(have.UID) != p.JobUID {
		return have, fmt.Sprintf("its UID is %s, the record's %s", have.UID, p.JobUID), nil
	}
	probe := want.DeepCopy()
	probe.Name, probe.GenerateName = "", want.Name
	if err := k.Client.Create(ctx, probe, client.DryRunAll); err != nil {
		return have, "", fmt.Errorf("dry run of hook Job %s/%s, to compare it with the one that exists: %w", want.Namespace, want.Name, err)
	}
	return have, notTheJob(have, probe, h.TimeoutOrDefault()), nil
}

// notTheJob says how have differs from made, what the API server made of
// the Job kmaint would make ("" when it does not).
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

// validDeadline: kmaint gives a Job the time left of its attempt, at least
// a second, never more than the hook's timeout.
func validDeadline(s *int64, timeout time.Duration) bool {
	return s != nil && *s >= 1 && *s <= int64(math.Ceil(timeout.Seconds()))
}

// comparableSpec is a Job's spec without what the API server derives from
// the Job's own name and UID, and without its deadline. With no manual
// selector, the API server makes the selector and these labels itself,
// whatever the Job says.
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
