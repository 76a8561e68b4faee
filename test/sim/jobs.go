package sim

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The simulated cluster has no Job controller and no kubelet that runs
// containers: hookJobs stands in for both, for the pools' hook Jobs. A Job
// whose first container's command is one of the programs below does what
// it says on the simulated node; any other succeeds. Each takes HookTime.
const (
	// StageProgram records the Job's KMAINT_DESIRED_CONFIG as staged on
	// its node, as an upgrade Job installs a package before the reboot.
	StageProgram = "kmaint-sim-stage"
	// CheckProgram succeeds when the node runs the boot the Job was made
	// for and the config it staged is KMAINT_DESIRED_CONFIG, as a check
	// after the reboot would read `uname -r`; it fails otherwise.
	CheckProgram = "kmaint-sim-check"
	// FlakyProgram fails its first attempt and succeeds after, as a Job
	// that meets a transient error does.
	FlakyProgram = "kmaint-sim-flaky"
)

// HookTime is how long a simulated hook Job runs.
const HookTime = time.Second

// hookJobs runs the hook Jobs of one namespace.
type hookJobs struct {
	mu sync.Mutex
	// staged is the config each node staged, by node.
	staged map[string]string
}

// Staged returns the config a stage Job staged on the node; empty when
// none did.
func (c *Cluster) Staged(node string) string {
	if c.jobs == nil {
		return ""
	}
	c.jobs.mu.Lock()
	defer c.jobs.mu.Unlock()
	return c.jobs.staged[node]
}

// runHookJobs creates the hooks namespace and runs its Jobs until the
// cluster stops.
func (c *Cluster) runHookJobs() error {
	ns := c.Config.HooksNamespace
	err := c.Bed.Client.Create(c.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create hooks namespace %s: %w", ns, err)
	}
	wc, err := client.NewWithWatch(c.Bed.Config, client.Options{Scheme: c.Bed.Scheme})
	if err != nil {
		return err
	}
	w, err := wc.Watch(c.ctx, &batchv1.JobList{}, client.InNamespace(ns))
	if err != nil {
		return fmt.Errorf("watch hook Jobs: %w", err)
	}
	c.jobs = &hookJobs{staged: map[string]string{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			job, ok := ev.Object.(*batchv1.Job)
			if !ok || ev.Type != watch.Added || len(job.Status.Conditions) > 0 {
				continue
			}
			go c.runHookJob(job)
		}
	}()
	return nil
}

// runHookJob runs one Job after HookTime and writes how it ended.
func (c *Cluster) runHookJob(job *batchv1.Job) {
	select {
	case <-c.ctx.Done():
		return
	case <-time.After(HookTime):
	}
	fail, msg := c.jobs.run(c, job)
	if err := FinishJob(c.ctx, c.Bed.Client, job, fail, msg); err != nil && c.ctx.Err() == nil {
		c.Config.Log.Error(err, "finish hook Job", "job", job.Name)
	}
}

// run does what the Job's program says; it returns whether it failed, and
// why.
func (j *hookJobs) run(c *Cluster, job *batchv1.Job) (bool, string) {
	if len(job.Spec.Template.Spec.Containers) == 0 {
		return true, "no container"
	}
	ctr := job.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range ctr.Env {
		env[e.Name] = e.Value
	}
	node, want := env["KMAINT_NODE"], env["KMAINT_DESIRED_CONFIG"]
	j.mu.Lock()
	defer j.mu.Unlock()
	switch strings.Join(ctr.Command, " ") {
	case StageProgram:
		j.staged[node] = want
	case FlakyProgram:
		if env["KMAINT_ATTEMPT"] == "1" {
			return true, "a transient error, the first time"
		}
	case CheckProgram:
		n := c.Node(node)
		switch {
		case n == nil:
			return true, "no such node " + node
		case n.BootID() != env["KMAINT_BOOT_ID"]:
			return true, fmt.Sprintf("node %s runs boot %s, not %s", node, n.BootID(), env["KMAINT_BOOT_ID"])
		case j.staged[node] != want:
			return true, fmt.Sprintf("node %s runs config %q, not %q", node, j.staged[node], want)
		}
	}
	return false, ""
}

// FinishJob writes a Job's status as the Job controller does once its pod
// succeeded, or failed with msg.
func FinishJob(ctx context.Context, c client.Client, job *batchv1.Job, fail bool, msg string) error {
	now := metav1.NewTime(time.Now())
	job = job.DeepCopy()
	job.Status.StartTime = &now
	cond := func(t batchv1.JobConditionType, reason, msg string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastProbeTime: now, LastTransitionTime: now}
	}
	if fail {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, msg),
			cond(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, msg),
		}
	} else {
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		job.Status.Conditions = []batchv1.JobCondition{
			cond(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, ""),
			cond(batchv1.JobComplete, batchv1.JobReasonCompletionsReached, ""),
		}
	}
	return c.Status().Update(ctx, job)
}
