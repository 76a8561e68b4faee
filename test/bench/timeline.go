package bench

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/operator/api/protocol"
)

// timeline records, from a watch on the nodes, when each protocol step was
// first seen.
type timeline struct {
	mu sync.Mutex
	// raised is when a node's reboot-requested first appeared.
	raised map[string]time.Time
	// approvals and completions are when reboot-approved appeared on, and
	// disappeared from, a node, in the order seen.
	approvals, completions []time.Time
	approved               map[string]bool
	unavailable            map[string]bool
	mostUnavailable        int
	done                   int
	doneCh                 chan struct{}
	want                   int
}

func watchTimeline(ctx context.Context, c client.WithWatch, pool string, want int) (*timeline, error) {
	w, err := c.Watch(ctx, &corev1.NodeList{}, client.MatchingLabels{"pool": pool})
	if err != nil {
		return nil, err
	}
	tl := &timeline{raised: map[string]time.Time{}, approved: map[string]bool{}, unavailable: map[string]bool{},
		doneCh: make(chan struct{}), want: want}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if n, ok := ev.Object.(*corev1.Node); ok && ev.Type != watch.Deleted {
				tl.observe(n, time.Now())
			}
		}
	}()
	return tl, nil
}

func (tl *timeline) observe(n *corev1.Node, now time.Time) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if _, ok := n.Annotations[protocol.RebootRequested]; ok {
		if _, seen := tl.raised[n.Name]; !seen {
			tl.raised[n.Name] = now
		}
	}
	_, approved := n.Annotations[protocol.RebootApproved]
	switch {
	case approved && !tl.approved[n.Name]:
		tl.approvals = append(tl.approvals, now)
	case !approved && tl.approved[n.Name]:
		tl.completions = append(tl.completions, now)
		tl.done++
		if tl.done == tl.want {
			close(tl.doneCh)
		}
	}
	tl.approved[n.Name] = approved
	_, admitted := n.Annotations[protocol.Admitted]
	tl.unavailable[n.Name] = approved || admitted || n.Spec.Unschedulable || !ready(n)
	count := 0
	for _, u := range tl.unavailable {
		if u {
			count++
		}
	}
	tl.mostUnavailable = max(tl.mostUnavailable, count)
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// slotToApproval pairs each approval after the first k with the earliest
// completion not yet paired before it: the time a freed slot stayed empty.
func (tl *timeline) slotToApproval(k int) []time.Duration {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []time.Duration
	next := 0
	for i, a := range tl.approvals {
		if i < k {
			continue
		}
		if next < len(tl.completions) && !tl.completions[next].After(a) {
			out = append(out, a.Sub(tl.completions[next]))
			next++
		}
	}
	return out
}

// requestToAnnotation is, per node, the time from the request to the
// daemon's annotation.
func (tl *timeline) requestToAnnotation(requested map[string]time.Time) []time.Duration {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []time.Duration
	for name, t := range requested {
		if r, ok := tl.raised[name]; ok {
			out = append(out, r.Sub(t))
		}
	}
	return out
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return s[i]
}
