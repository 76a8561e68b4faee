package drain

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

const (
	// drainStepWorkers bounds the drain steps under way at once, over all
	// pools. A step is a pod list and the node's evictions; a pool draining
	// its budget of nodes together would otherwise send them all at once.
	drainStepWorkers = 16
	// StepTimeout bounds one step, so that an API server that does not
	// answer holds a worker for no longer.
	StepTimeout = time.Minute
	// minStepMaxAge is the least age at which a step's finding that the
	// node is drained goes stale (it is twice the poll interval if that is
	// longer). A reconcile that lags behind the steps approves on a fresh
	// one, not on what the node looked like long ago.
	minStepMaxAge = 5 * time.Second
)

// Key names one drain: a node's admission for a boot, at a time (a
// retried drain is a new admission). A step's result is only ever read for
// the drain it was taken for. The time is kept as an instant (Unix
// nanoseconds): a time.Time read again from the annotation in another
// zone would compare unequal, start the drain over at every reconcile, and
// never let it finish.
type Key struct {
	node     string
	boot     string
	admitted int64
	// afterHooks is the drain taken again once the node's beforeReboot
	// hooks passed (AfterHooks).
	afterHooks bool
}

func KeyOf(node, boot string, admitted time.Time) Key {
	return Key{node: node, boot: boot, admitted: admitted.UnixNano()}
}

// AfterHooks is the same drain taken again once the node's beforeReboot
// hooks passed: a new drain to Follow, whose steps all begin after the
// call that first asks for it. A node may wait at its hooks for minutes,
// and a pod that landed on it just before they passed would go unseen by
// a step taken before it.
func (k Key) AfterHooks() Key {
	k.afterHooks = true
	return k
}

// StepResult is what a node's last drain step found.
type StepResult struct {
	Progress Progress
	Err      error
	// At is when the step ended.
	At time.Time
	// Stale is true when the step ended too long ago to approve the node
	// on it: a pod bound to the node by name since would go unseen.
	Stale bool
}

// followedDrain is a drain the gate follows.
type followedDrain struct {
	key  Key
	pool string
	opts v1alpha1.DrainOptions
	// asked is whether the gate asked for the drain since its last step:
	// a drain nobody asked about since is not stepped again until
	// someone does (idle).
	asked, idle bool
	// last is the last step's result, nil before the first step ends.
	last *StepResult
	// pods is what the drain's steps know of the node's pods, from the
	// first step on: the version they list from and the watch that
	// follows them (nodepods.go).
	pods *NodePods
	// waking is the Gone channel a goroutine waits on to step the drain
	// at once, nil when none does.
	waking <-chan struct{}
	// followed is when the gate first asked for the drain, after the
	// node's cordon: the pods' version the drain lists from must have been
	// read since (real time, as Versions compares).
	followed time.Time
}

// Stepper takes one step of a node's drain; *Drainer is the real one.
type Stepper interface {
	// PodsVersionAfter returns the pods' resource version as read by a
	// List that began at or after t.
	PodsVersionAfter(ctx context.Context, t time.Time) (string, error)
	Step(ctx context.Context, node string, opts v1alpha1.DrainOptions, pods *NodePods) (Progress, error)
}

// Steps steps drains outside the pool's reconcile. A step waits on the
// API server (a pod list, then an eviction per pod), and a pool drains its
// whole budget of nodes together; stepped inside the reconcile, a slot
// freed by one node waited for every other node's step before the next
// node was admitted, 30 s on average at 2000 nodes. Here a reconcile only
// reads the last result of each drain and asks for the drain to go on;
// workers step the drains every DrainPollInterval and wake the pool with
// each result.
type Steps struct {
	drainer Stepper
	poll    time.Duration
	// now is the time steps end at, and are read at; real time, as the
	// API server's.
	now func() time.Time

	mu     sync.Mutex
	drains map[string]*followedDrain // by node name
	queue  workqueue.TypedDelayingInterface[string]
	// wake enqueues a reconcile of a pool; set when the gate's controller
	// starts the workers.
	wake func(pool string)
}

func NewSteps(drainer Stepper, poll time.Duration) *Steps {
	return &Steps{
		drainer: drainer,
		poll:    poll,
		now:     time.Now,
		drains:  map[string]*followedDrain{},
		queue:   workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Name: "kmaint_drain_steps"}),
	}
}

// follow asks for the drain of key to go on for pool and returns its last
// step's result, if a step ended. The first call for a drain queues its
// first step; later steps follow every poll interval while the gate keeps
// asking.
func (s *Steps) Follow(key Key, pool string, opts v1alpha1.DrainOptions) (StepResult, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.drains[key.node]
	if d == nil || d.key != key {
		d.stop()
		d = &followedDrain{key: key, followed: time.Now()}
		s.drains[key.node] = d
		s.queue.Add(key.node)
	}
	if d.idle {
		d.idle = false
		s.queue.Add(key.node)
	}
	d.pool, d.opts, d.asked = pool, opts, true
	if d.last == nil {
		return StepResult{}, false
	}
	last := *d.last
	last.Stale = s.now().Sub(last.At) > max(minStepMaxAge, 2*s.poll)
	return last, true
}

// stop ends the drain of a node: it was approved, given up, or what a step
// found no longer holds. A step under way ends, and its result is dropped.
func (s *Steps) Stop(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drains[node].stop()
	delete(s.drains, node)
}

// stop ends the watch of the drain's pods; nil stops nothing.
func (d *followedDrain) stop() {
	if d != nil && d.pods != nil {
		d.pods.Close()
	}
}

// stopOthers ends the drains of pool whose nodes are not in following:
// they finished, or left the pool, without a stop.
func (s *Steps) StopOthers(pool string, following map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for node, d := range s.drains {
		if d.pool == pool && !following[node] {
			d.stop()
			delete(s.drains, node)
		}
	}
}

// start runs the workers until ctx ends; wake is called with a pool's name
// after each step of one of its drains.
func (s *Steps) Start(ctx context.Context, wake func(pool string)) {
	s.mu.Lock()
	s.wake = wake
	s.mu.Unlock()
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	for range drainStepWorkers {
		go func() {
			for s.next(ctx) {
			}
		}()
	}
}

// next takes one step of the next drain in the queue; it returns false
// once the queue is shut down.
func (s *Steps) next(ctx context.Context) bool {
	node, shutdown := s.queue.Get()
	if shutdown {
		return false
	}
	defer s.queue.Done(node)
	s.mu.Lock()
	d := s.drains[node]
	if d == nil {
		s.mu.Unlock()
		return true
	}
	if !d.asked {
		// No reconcile read the last result yet (the pool's reconciles
		// lag, or stopped following the drain): the next follow steps
		// again, and the result stays for it.
		d.idle = true
		s.mu.Unlock()
		return true
	}
	d.asked = false
	key, opts, pods, followed := d.key, d.opts, d.pods, d.followed
	s.mu.Unlock()

	stepCtx, cancel := context.WithTimeout(ctx, StepTimeout)
	progress, err := Progress{}, error(nil)
	if pods == nil {
		// A version read for another drain or a pod check since the
		// cordon serves this one too.
		var since string
		if since, err = s.drainer.PodsVersionAfter(stepCtx, followed); err == nil {
			pods = s.keepPods(node, d, NewNodePods(ctx, since))
		}
	}
	if err == nil && pods != nil {
		progress, err = s.drainer.Step(stepCtx, node, opts, pods)
	}
	cancel()

	s.mu.Lock()
	if s.drains[node] != d || d.key != key {
		s.mu.Unlock()
		return true // stopped while it stepped
	}
	d.last = &StepResult{Progress: progress, Err: err, At: s.now()}
	pool, wake := d.pool, s.wake
	s.wakeWhenGone(node, d)
	s.mu.Unlock()
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Drain step failed", "node", node, "error", err.Error())
	}
	s.queue.AddAfter(node, s.poll)
	if wake != nil {
		wake(pool)
	}
	return true
}

// keepPods makes pods the drain's, unless the drain was stopped while its
// version was read: then it returns nil, and closes pods.
func (s *Steps) keepPods(node string, d *followedDrain, pods *NodePods) *NodePods {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drains[node] != d {
		pods.Close()
		return nil
	}
	d.pods = pods
	return pods
}

// wakeWhenGone steps the drain as soon as the pods its last step left are
// gone, rather than at its next poll: a drain is done the moment its last
// pod goes. Called with s.mu held.
func (s *Steps) wakeWhenGone(node string, d *followedDrain) {
	if d.pods == nil {
		return
	}
	gone := d.pods.Gone()
	if gone == nil || gone == d.waking {
		return
	}
	d.waking = gone
	go func() {
		<-gone
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.drains[node] != d {
			return
		}
		d.waking = nil
		s.queue.Add(node)
	}()
}
