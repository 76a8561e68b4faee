package drain

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// gatedDrainer answers each node's steps with what the test set, and holds
// the steps of the nodes the test blocks until it releases them.
type gatedDrainer struct {
	mu      sync.Mutex
	steps   map[string]int
	since   map[string][]string
	answer  map[string]Progress
	blocked map[string]chan struct{}
	// version is the pods' version PodsVersionAfter reads; afters are the
	// times it was asked for a read after.
	version string
	afters  []time.Time
}

func (f *gatedDrainer) PodsVersionAfter(_ context.Context, t time.Time) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.afters = append(f.afters, t)
	return f.version, nil
}

func (f *gatedDrainer) setVersion(v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version = v
}

func (f *gatedDrainer) readsAfter() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.afters)
}

func newGatedDrainer() *gatedDrainer {
	return &gatedDrainer{steps: map[string]int{}, since: map[string][]string{}, answer: map[string]Progress{}, blocked: map[string]chan struct{}{}}
}

func (f *gatedDrainer) Step(ctx context.Context, node string, _ v1alpha1.DrainOptions, pods *NodePods) (Progress, error) {
	f.mu.Lock()
	f.steps[node]++
	f.since[node] = append(f.since[node], pods.Since())
	gate := f.blocked[node]
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return Progress{}, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.answer[node], nil
}

func (f *gatedDrainer) Force(context.Context, string, v1alpha1.DrainOptions, func([]string) error) ([]string, error) {
	return nil, nil
}

func (f *gatedDrainer) block(node string) (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan struct{})
	f.blocked[node] = ch
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

func (f *gatedDrainer) set(node string, p Progress) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answer[node] = p
}

func (f *gatedDrainer) count(node string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.steps[node]
}

// sinces returns the pods' versions the node's steps were given, in order.
func (f *gatedDrainer) sinces(node string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.since[node])
}

// wakes records the pools woken, in order.
type wakes struct {
	mu    sync.Mutex
	pools []string
}

func (w *wakes) wake(pool string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pools = append(w.pools, pool)
}

func (w *wakes) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pools)
}

func startSteps(t *testing.T, d Stepper, poll time.Duration) (*Steps, *wakes) {
	t.Helper()
	s := NewSteps(d, poll)
	w := &wakes{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s.Start(ctx, w.wake)
	return s, w
}

func TestASlowDrainStepHoldsUpNoOtherDrain(t *testing.T) {
	g := NewWithT(t)
	d := newGatedDrainer()
	release := d.block("slow")
	defer release()
	d.set("fast", Progress{Done: true})
	s, w := startSteps(t, d, time.Hour)
	admitted := time.Now()
	slow := KeyOf("slow", "b", admitted)
	fast := KeyOf("fast", "b", admitted)

	// Asking returns at once, before any step ended.
	_, stepped := s.Follow(slow, "p", v1alpha1.DrainOptions{})
	g.Expect(stepped).To(BeFalse())
	_, stepped = s.Follow(fast, "p", v1alpha1.DrainOptions{})
	g.Expect(stepped).To(BeFalse())

	// The fast node's step ends and wakes the pool while the slow one's
	// hangs.
	g.Eventually(w.count, 10*time.Second).Should(Equal(1))
	last, stepped := s.Follow(fast, "p", v1alpha1.DrainOptions{})
	g.Expect(stepped).To(BeTrue())
	g.Expect(last.Progress.Done).To(BeTrue())
	_, stepped = s.Follow(slow, "p", v1alpha1.DrainOptions{})
	g.Expect(stepped).To(BeFalse(), "the slow node's step has not ended")

	release()
	g.Eventually(func() bool { _, ok := s.Follow(slow, "p", v1alpha1.DrainOptions{}); return ok }, 10*time.Second).Should(BeTrue())
}

func TestDrainIsSteppedOnlyWhileTheGateAsks(t *testing.T) {
	g := NewWithT(t)
	d := newGatedDrainer()
	d.set("n", Progress{Remaining: 3})
	s, _ := startSteps(t, d, 20*time.Millisecond)
	key := KeyOf("n", "b", time.Now())

	s.Follow(key, "p", v1alpha1.DrainOptions{})
	g.Eventually(func() int { return d.count("n") }, 10*time.Second).Should(Equal(1))
	// Unasked, the drain waits for the next reconcile, however many poll
	// intervals go by; its result stays for that reconcile.
	g.Consistently(func() int { return d.count("n") }, 300*time.Millisecond).Should(Equal(1))
	last, stepped := s.Follow(key, "p", v1alpha1.DrainOptions{})
	g.Expect(stepped).To(BeTrue())
	g.Expect(last.Progress.Remaining).To(Equal(3))
	g.Eventually(func() int { return d.count("n") }, 10*time.Second).Should(Equal(2))

	// Stopped, it is stepped no more, even when a step was due.
	s.Follow(key, "p", v1alpha1.DrainOptions{})
	s.Stop("n")
	g.Consistently(func() int { return d.count("n") }, 300*time.Millisecond).Should(BeNumerically("<=", 3))
	steps := d.count("n")
	g.Consistently(func() int { return d.count("n") }, 300*time.Millisecond).Should(Equal(steps))
}

func TestAStepFoundForAnEarlierAdmissionIsNotReadForALaterOne(t *testing.T) {
	g := NewWithT(t)
	d := newGatedDrainer()
	d.set("n", Progress{Done: true})
	s, w := startSteps(t, d, time.Hour)
	first := KeyOf("n", "b", time.Now())
	s.Follow(first, "p", v1alpha1.DrainOptions{})
	g.Eventually(w.count, 10*time.Second).Should(Equal(1))

	// The drain was retried: a new admission of the same boot.
	release := d.block("n")
	defer release()
	retried := first
	retried.admitted = first.admitted + int64(time.Minute)
	_, stepped := s.Follow(retried, "p", v1alpha1.DrainOptions{})
	g.Expect(stepped).To(BeFalse(), "the first admission's drained node must not approve the second")
	release()
	g.Eventually(w.count, 10*time.Second).Should(Equal(2))
	last, stepped := s.Follow(retried, "p", v1alpha1.DrainOptions{})
	g.Expect(stepped).To(BeTrue())
	g.Expect(last.Progress.Done).To(BeTrue())
}

// A drain's first step is given the pods' version as read after the gate
// first followed the drain (after the cordon), and every later step lists
// the node's pods no older than it, without reading it again; a retried
// drain (a new admission, a new cordon) asks for a read after its own
// start.
func TestEveryStepOfADrainListsNoOlderThanAVersionReadAfterItBegan(t *testing.T) {
	g := NewWithT(t)
	d := newGatedDrainer()
	d.setVersion("41")
	d.set("n", Progress{Remaining: 1})
	s, _ := startSteps(t, d, 10*time.Millisecond)
	cordoned := time.Now()
	first := KeyOf("n", "b", cordoned)
	g.Eventually(func() int { s.Follow(first, "p", v1alpha1.DrainOptions{}); return d.count("n") }, 10*time.Second).Should(BeNumerically(">=", 3))
	g.Expect(d.sinces("n")[:3]).To(Equal([]string{"41", "41", "41"}))
	g.Expect(d.readsAfter()).To(HaveLen(1), "one read of the version per drain")
	g.Expect(d.readsAfter()[0]).NotTo(BeTemporally("<", cordoned), "a version read before the cordon would miss pods bound since")

	s.Stop("n")
	d.setVersion("97")
	recordoned := time.Now()
	retried := first
	retried.admitted = first.admitted + int64(time.Minute)
	steps := d.count("n")
	// A step of the first drain already under way when it stopped may
	// still reach the drainer, with the first drain's version; its result
	// is dropped. The retried drain's steps are the ones after it.
	retriedSinces := func() []string {
		got := d.sinces("n")[steps:]
		if len(got) > 0 && got[0] == "41" {
			got = got[1:]
		}
		return got
	}
	g.Eventually(func() int { s.Follow(retried, "p", v1alpha1.DrainOptions{}); return len(retriedSinces()) }, 10*time.Second).Should(BeNumerically(">=", 2))
	g.Expect(retriedSinces()[:2]).To(Equal([]string{"97", "97"}))
	g.Expect(d.readsAfter()).To(HaveLen(2))
	g.Expect(d.readsAfter()[1]).NotTo(BeTemporally("<", recordoned))
}

func TestDrainsNoLongerFollowedByTheirPoolAreStopped(t *testing.T) {
	g := NewWithT(t)
	d := newGatedDrainer()
	d.set("a", Progress{Remaining: 1})
	d.set("b", Progress{Remaining: 1})
	d.set("c", Progress{Remaining: 1})
	s, w := startSteps(t, d, time.Hour)
	now := time.Now()
	s.Follow(KeyOf("a", "", now), "p", v1alpha1.DrainOptions{})
	s.Follow(KeyOf("b", "", now), "p", v1alpha1.DrainOptions{})
	s.Follow(KeyOf("c", "", now), "q", v1alpha1.DrainOptions{})
	g.Eventually(w.count, 10*time.Second).Should(Equal(3))

	s.StopOthers("p", map[string]bool{"a": true})
	s.mu.Lock()
	defer s.mu.Unlock()
	g.Expect(s.drains).To(HaveKey("a"))
	g.Expect(s.drains).NotTo(HaveKey("b"), "b finished in pool p without a stop")
	g.Expect(s.drains).To(HaveKey("c"), "pool q's drain is q's to stop")
}

// A reconcile that lags behind the steps does not approve a node on what
// a step found long ago: the finding goes stale, and the next step, which
// the gate's asking brings, is fresh again.
func TestADrainedFindingGoesStale(t *testing.T) {
	g := NewWithT(t)
	d := newGatedDrainer()
	d.set("n", Progress{Done: true})
	s, w := startSteps(t, d, 100*time.Millisecond)
	var mu sync.Mutex
	now := time.Now()
	s.mu.Lock()
	s.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s.mu.Unlock()
	key := KeyOf("n", "b", now)

	s.Follow(key, "p", v1alpha1.DrainOptions{})
	g.Eventually(w.count, 10*time.Second).Should(BeNumerically(">=", 1))
	last, stepped := s.Follow(key, "p", v1alpha1.DrainOptions{})
	g.Expect(stepped).To(BeTrue())
	g.Expect(last.Stale).To(BeFalse())

	mu.Lock()
	now = now.Add(minStepMaxAge + time.Second)
	mu.Unlock()
	last, _ = s.Follow(key, "p", v1alpha1.DrainOptions{})
	g.Expect(last.Stale).To(BeTrue(), "found drained %s ago", minStepMaxAge+time.Second)
	g.Eventually(func() bool { last, _ := s.Follow(key, "p", v1alpha1.DrainOptions{}); return last.Stale }, 10*time.Second).Should(BeFalse())
}

// An admission read again in another time zone is the same drain: its
// result stands, and no new first step is queued.
func TestAnAdmissionReadInAnotherZoneIsTheSameDrain(t *testing.T) {
	g := NewWithT(t)
	d := newGatedDrainer()
	d.set("n", Progress{Remaining: 2})
	s, w := startSteps(t, d, time.Hour)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	s.Follow(KeyOf("n", "b", at), "p", v1alpha1.DrainOptions{})
	g.Eventually(w.count, 10*time.Second).Should(Equal(1))

	elsewhere := at.In(time.FixedZone("CET", 3600))
	last, stepped := s.Follow(KeyOf("n", "b", elsewhere), "p", v1alpha1.DrainOptions{})
	g.Expect(stepped).To(BeTrue(), "the drain started over")
	g.Expect(last.Progress.Remaining).To(Equal(2))
}
