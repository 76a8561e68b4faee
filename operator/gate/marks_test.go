package gate

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

// A marking the schema would refuse (a pool stored before its rules) is
// refused; labels that another pool's selector matches, or that their own
// pool's no longer would, are not: they move no node in flight.
func TestMarkingProblem(t *testing.T) {
	a := gen.Pool("a", intstr.FromInt32(1))
	for name, tc := range map[string]struct {
		labels map[string]v1alpha1.MarkValue
		taints []v1alpha1.MarkTaint
		// want is a part of the refusal; empty when the marks may go on.
		want string
	}{
		"harmless":           {labels: map[string]v1alpha1.MarkValue{"node.kubernetes.io/exclude-from-external-load-balancers": "true"}},
		"own selector key":   {labels: map[string]v1alpha1.MarkValue{"pool": "b"}},
		"another pool's key": {labels: map[string]v1alpha1.MarkValue{"tier": "canary"}},
		"stored NoExecute":   {taints: []v1alpha1.MarkTaint{{Key: "x", Effect: "NoExecute"}}, want: "NoExecute"},
		"stored kmaint key":  {labels: map[string]v1alpha1.MarkValue{"kmaint.io/admitted": "x"}, want: "under kmaint.io"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			pool := a.DeepCopy()
			pool.Spec.NodeMarking = &v1alpha1.NodeMarking{DuringReboot: &v1alpha1.DuringRebootMarks{Labels: tc.labels, Taints: tc.taints}}
			got := markingProblem(&poolState{poolRead: poolRead{pool: pool, now: time.Now()}})
			if tc.want == "" {
				g.Expect(got).To(BeEmpty())
				return
			}
			g.Expect(got).To(ContainSubstring(tc.want))
		})
	}
}

// What happens at the deadline, from the pool's options and what the node
// recorded.
func TestDecideDeadline(t *testing.T) {
	now := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	retry := func(n int32, backoff time.Duration) v1alpha1.DrainOptions {
		return v1alpha1.DrainOptions{OnTimeout: v1alpha1.DrainRetryAction, Retry: &v1alpha1.DrainRetry{MaxAttempts: n, Backoff: &metav1.Duration{Duration: backoff}}}
	}
	for name, tc := range map[string]struct {
		opts    v1alpha1.DrainOptions
		prev    *protocol.DrainRetrying
		refused bool
		want    deadlineDecision
	}{
		"default retries 3 times 30m apart": {want: deadlineDecision{step: deadlineRetries, attempts: 1, maxAttempts: 3, nextAt: now.Add(30 * time.Minute)}},
		"second attempt":                    {opts: retry(3, time.Minute), prev: &protocol.DrainRetrying{BootID: "b", Attempts: 1}, want: deadlineDecision{step: deadlineRetries, attempts: 2, maxAttempts: 3, nextAt: now.Add(time.Minute)}},
		"last attempt abandons":             {opts: retry(3, time.Minute), prev: &protocol.DrainRetrying{BootID: "b", Attempts: 2}, want: deadlineDecision{step: deadlineAbandons, attempts: 3, maxAttempts: 3}},
		"a lowered maxAttempts abandons":    {opts: retry(2, time.Minute), prev: &protocol.DrainRetrying{BootID: "b", Attempts: 5}, want: deadlineDecision{step: deadlineAbandons, attempts: 6, maxAttempts: 2}},
		"another boot's attempts count not": {opts: retry(2, time.Minute), prev: &protocol.DrainRetrying{BootID: "old", Attempts: 1}, want: deadlineDecision{step: deadlineRetries, attempts: 1, maxAttempts: 2, nextAt: now.Add(time.Minute)}},
		"one attempt is abandon":            {opts: retry(1, time.Minute), want: deadlineDecision{step: deadlineAbandons, attempts: 1, maxAttempts: 1}},
		"stored past the bounds":            {opts: retry(1000, 1000*time.Hour), prev: &protocol.DrainRetrying{BootID: "b", Attempts: 99}, want: deadlineDecision{step: deadlineAbandons, attempts: 100, maxAttempts: 100}},
		"largest backoff":                   {opts: retry(100, 24*time.Hour), want: deadlineDecision{step: deadlineRetries, attempts: 1, maxAttempts: 100, nextAt: now.Add(24 * time.Hour)}},
		"abandon":                           {opts: v1alpha1.DrainOptions{OnTimeout: v1alpha1.DrainAbandonAction}, want: deadlineDecision{step: deadlineAbandons, attempts: 1, maxAttempts: 1}},
		"force":                             {opts: v1alpha1.DrainOptions{OnTimeout: v1alpha1.DrainForceAction}, want: deadlineDecision{step: deadlineForces, attempts: 1, maxAttempts: 1}},
		"a refused marking is never forced": {opts: v1alpha1.DrainOptions{OnTimeout: v1alpha1.DrainForceAction}, refused: true, want: deadlineDecision{step: deadlineAbandons, attempts: 1, maxAttempts: 1}},
	} {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(decideDeadline(tc.opts, tc.prev, "b", tc.refused, now)).To(Equal(tc.want))
		})
	}
}
