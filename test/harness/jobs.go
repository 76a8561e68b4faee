package harness

import (
	"context"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/sim"
	"github.com/kmaint/kmaint/test/testbed"
)

// JobOutcome is how the Job runner ends a Job: succeeded, or failed with a
// message; Hold leaves it running.
type JobOutcome struct {
	Fail    bool
	Message string
	Hold    bool
}

// Jobs stands in for the Job controller and the kubelet the test API
// server lacks: it ends each Job made in its namespace as decide says,
// and keeps every Job it saw made.
type Jobs struct {
	mu   sync.Mutex
	made []*batchv1.Job
}

// RunJobs runs the Jobs made in namespace until the test ends.
func RunJobs(t testing.TB, bed *testbed.Bed, namespace string, decide func(*batchv1.Job) JobOutcome) *Jobs {
	t.Helper()
	w, ctx, _ := watchUntilEnd(t, bed, &batchv1.JobList{}, client.InNamespace(namespace))
	j := &Jobs{}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			job, ok := ev.Object.(*batchv1.Job)
			if !ok || ev.Type != watch.Added {
				continue
			}
			j.mu.Lock()
			j.made = append(j.made, job.DeepCopy())
			j.mu.Unlock()
			out := decide(job)
			if out.Hold {
				continue
			}
			if err := FinishJob(ctx, bed.Client, job, out); err != nil && ctx.Err() == nil {
				t.Errorf("finish Job %s: %v", job.Name, err)
			}
		}
	}()
	return j
}

// Made returns the Jobs made so far, in the order they were.
func (j *Jobs) Made() []*batchv1.Job {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]*batchv1.Job(nil), j.made...)
}

// FinishJob writes a Job's status as the Job controller does when its pod
// succeeded or failed.
func FinishJob(ctx context.Context, c client.Client, job *batchv1.Job, out JobOutcome) error {
	return sim.FinishJob(ctx, c, job, out.Fail, out.Message)
}

// JobEnv returns the value of a variable in the first container of a Job.
func JobEnv(job *batchv1.Job, name string) string {
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
