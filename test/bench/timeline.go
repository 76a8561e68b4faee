package bench

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/test/harness"
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
	// admissions are when kmaint.io/admitted appeared on a node, in the
	// order seen; admittedAt is the last per node, and drains the time from
	// each admission to its node's approval: the drain, the evictions of
	// the node's pods.
	admissions []time.Time
	admittedAt map[string]time.Time
	drains     []time.Duration
	// approvedAt is when each node's approval was seen, and reboots the
	// time from an approval to its completion: the reboot itself (r), the
	// daemon's start on the new boot and the gate's closing of it.
	approvedAt map[string]time.Time
	reboots    []time.Duration
	// approvedBoot is the boot each node was approved in, backAt when it
	// was first seen Ready in another, and closings the time from there
	// to the completion: the daemon's start on the new boot and the
	// gate's closing of the reboot, what is not the simulated reboot.
	approvedBoot    map[string]string
	backAt          map[string]time.Time
	closings        []time.Duration
	unavailable     map[string]bool
	unavailableNow  int
	mostUnavailable int
	done            int
	doneCh          chan struct{}
	want            int
}

// watchTimeline follows the pool's nodes with an informer, which lists and
// watches again if the API server drops a watch that fell behind, as it does
// under the load of a large rollout.
func watchTimeline(ctx context.Context, cs kubernetes.Interface, pool string, want int) (*timeline, error) {
	tl := &timeline{raised: map[string]time.Time{}, approved: map[string]bool{}, unavailable: map[string]bool{}, admittedAt: map[string]time.Time{},
		approvedAt: map[string]time.Time{}, approvedBoot: map[string]string{}, backAt: map[string]time.Time{}, doneCh: make(chan struct{}), want: want}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = "pool=" + pool
	}))
	observe := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok {
			tl.observe(n, time.Now())
		}
	}
	if _, err := factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return tl, nil
}

// completed returns how many reboots completed so far, and the most nodes
// seen unavailable at once.
func (tl *timeline) completed() (done, mostUnavailable int) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.done, tl.mostUnavailable
}

func (tl *timeline) observe(n *corev1.Node, now time.Time) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if _, ok := n.Annotations[protocol.RebootRequested]; ok {
		if _, seen := tl.raised[n.Name]; !seen {
			tl.raised[n.Name] = now
		}
	}
	_, admitted := n.Annotations[protocol.Admitted]
	if _, was := tl.admittedAt[n.Name]; admitted && !was {
		tl.admittedAt[n.Name] = now
		tl.admissions = append(tl.admissions, now)
	} else if !admitted {
		delete(tl.admittedAt, n.Name)
	}
	_, approved := n.Annotations[protocol.RebootApproved]
	switch {
	case approved && !tl.approved[n.Name]:
		tl.approvals = append(tl.approvals, now)
		tl.approvedAt[n.Name] = now
		tl.approvedBoot[n.Name] = n.Status.NodeInfo.BootID
		delete(tl.backAt, n.Name)
		if at, ok := tl.admittedAt[n.Name]; ok {
			tl.drains = append(tl.drains, now.Sub(at))
		}
	case !approved && tl.approved[n.Name]:
		tl.completions = append(tl.completions, now)
		if at, ok := tl.approvedAt[n.Name]; ok {
			tl.reboots = append(tl.reboots, now.Sub(at))
		}
		if at, ok := tl.backAt[n.Name]; ok {
			tl.closings = append(tl.closings, now.Sub(at))
		}
		tl.done++
		if tl.done == tl.want {
			close(tl.doneCh)
		}
	}
	tl.approved[n.Name] = approved
	if _, seen := tl.backAt[n.Name]; approved && !seen && n.Status.NodeInfo.BootID != tl.approvedBoot[n.Name] && protocol.Ready(n) {
		tl.backAt[n.Name] = now
	}
	was := tl.unavailable[n.Name]
	is := harness.Unavailable(n)
	tl.unavailable[n.Name] = is
	switch {
	case is && !was:
		tl.unavailableNow++
	case !is && was:
		tl.unavailableNow--
	}
	tl.mostUnavailable = max(tl.mostUnavailable, tl.unavailableNow)
}

// slotToApproval pairs each approval after the first k with the earliest
// completion not yet paired before it: the time from a freed slot to the
// next node's approval, its drain included.
func (tl *timeline) slotToApproval(k int) []time.Duration {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return pairAfter(tl.approvals, tl.completions, k)
}

// slotToAdmission pairs each admission after the first k with the
// earliest completion not yet paired before it: the time a freed slot
// stayed empty, the gate's own latency.
func (tl *timeline) slotToAdmission(k int) []time.Duration {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return pairAfter(tl.admissions, tl.completions, k)
}

// drainTimes are the times from admission to approval.
func (tl *timeline) drainTimes() []time.Duration {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return slices.Clone(tl.drains)
}

// rebootTimes are the times from approval to completion.
func (tl *timeline) rebootTimes() []time.Duration {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return slices.Clone(tl.reboots)
}

// closingTimes are the times from a node's return, Ready in a new boot,
// to its completion.
func (tl *timeline) closingTimes() []time.Duration {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return slices.Clone(tl.closings)
}

// pairAfter pairs each of events after the first k with the earliest of
// freed not yet paired before it, and returns the gaps.
func pairAfter(events, freed []time.Time, k int) []time.Duration {
	var out []time.Duration
	next := 0
	for i, a := range events {
		if i < k {
			continue
		}
		if next < len(freed) && !freed[next].After(a) {
			out = append(out, a.Sub(freed[next]))
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
