package soak_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/sim"
	"github.com/kmaint/kmaint/test/soak/checker"
)

// The kinds of what a soak does, as its results count them.
const (
	hostRequest    = "host-request"
	apiRequest     = "api-request"
	configRollout  = "config-rollout"
	operatorKilled = "operator-killed"
	daemonKilled   = "daemon-killed"
	nodeRebooted   = "node-rebooted-by-hand"
	nodeSlow       = "node-slow-to-return"
	budgetChanged  = "budget-changed"
	poolPaused     = "pool-paused"
	nodeRelabelled = "node-relabelled"
	apiRestarted   = "api-server-restarted"
	daemonCutOff   = "daemon-cut-off"
	metricRaised   = "metric-over-threshold"
	promDown       = "prometheus-unreachable"
	sentinel       = "sentinel-written"
	cronScheduled  = "cron-scheduled"
	alertFired     = "alert-fired"
	webhookDown    = "alert-webhook-unreachable"
)

// action is one thing the schedule may do, and how often against the
// others of its list.
type action struct {
	kind   string
	weight int
	do     func(s *soak) error
}

// requests are the ways the schedule asks for reboots, drawn every
// -soak.pace on average.
func requests() []action {
	return []action{
		{hostRequest, 30, (*soak).hostRequest},
		{apiRequest, 15, (*soak).apiRequest},
		{configRollout, 2, (*soak).configRollout},
		{metricRaised, 4, (*soak).fragmentMemory},
		{sentinel, 6, (*soak).writeSentinel},
		{cronScheduled, 2, (*soak).scheduleReboot},
		{alertFired, 5, (*soak).fireAlert},
	}
}

// faults are what the schedule breaks, drawn every -soak.fault-pace on
// average: on a clock of their own, so that a run with many requests is not
// also one whose operator is never up.
func faults() []action {
	return []action{
		// Rare by weight: each costs the operator its leader for a while,
		// and -soak.min-each makes them as often as a run needs.
		{operatorKilled, 1, (*soak).killOperator},
		{apiRestarted, 1, (*soak).restartAPIServer},
		{daemonKilled, 4, (*soak).killDaemon},
		{daemonCutOff, 3, (*soak).cutOffDaemon},
		{nodeRebooted, 3, (*soak).rebootByHand},
		{nodeSlow, 2, (*soak).slowNode},
		{promDown, 1, (*soak).stopPrometheus},
		{webhookDown, 1, (*soak).cutOffWebhook},
		{budgetChanged, 3, (*soak).changeBudget},
		{poolPaused, 2, (*soak).pausePool},
		{nodeRelabelled, 2, (*soak).relabelNode},
	}
}

// soak is one run: its cluster, its replicas, its random schedule and what
// it did.
type soak struct {
	start    time.Time
	ctx      context.Context
	rng      *rand.Rand
	cluster  *sim.Cluster
	replicas *replicas
	checker  *checker.Checker
	pools    []string
	// sentinels are the nodes' reboot sentinel files; alerts the soak's
	// Alertmanager.
	sentinels sentinels
	alerts    *alertmanager

	// later are the undoings the faults scheduled (a replica started
	// again, a pool resumed); quiesce runs those still pending at once.
	mu    sync.Mutex
	later []*time.Timer
	undo  []func()
	done  map[string]int
	// timeline is when each thing was done.
	timeline []moment
	seq      int
	// promStopped is true while Prometheus is down.
	promStopped bool
	// problems are the soak's own failures to undo a fault: the run then
	// does not show what it should.
	problems []error
}

// moment is one thing done, or one reboot, at a time of the run.
type moment struct {
	Seconds float64 `json:"seconds"`
	Kind    string  `json:"kind"`
}

func (s *soak) problem(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, err)
}

// pick returns one of n, at random.
func (s *soak) pick(n int) int { return s.rng.IntN(n) }

// between returns a duration in [lo, hi), at random.
func (s *soak) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)))
}

func (s *soak) node() sim.Node {
	nodes := s.cluster.Nodes()
	return nodes[s.pick(len(nodes))]
}

func (s *soak) pool() string { return s.pools[s.pick(len(s.pools))] }

// after runs undo after d, or at quiesce, whichever comes first, once.
func (s *soak) after(d time.Duration, undo func()) {
	var once sync.Once
	run := func() { once.Do(undo) }
	s.mu.Lock()
	defer s.mu.Unlock()
	s.later = append(s.later, time.AfterFunc(d, run))
	s.undo = append(s.undo, run)
}

func (s *soak) tag() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("soak-%d", s.seq)
}

// hostRequest runs `kmaint-daemon request-reboot` on a node. The checker
// hears of a request once it was made: one refused was never a request.
func (s *soak) hostRequest() error {
	n, tag := s.node(), s.tag()
	at := time.Now()
	if err := n.RequestReboot("soak " + tag); err != nil {
		return err
	}
	s.checker.Requested(checker.Request{Node: n.Name(), Source: v1alpha1.SourceHost, Tag: tag, At: at})
	return nil
}

func (s *soak) apiRequest() error {
	n, tag := s.node(), s.tag()
	at := time.Now()
	nm := &v1alpha1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: tag},
		Spec: v1alpha1.NodeMaintenanceSpec{NodeName: n.Name(), Reason: "soak " + tag}}
	if err := bed.Client.Create(s.ctx, nm); err != nil {
		return err
	}
	s.checker.Requested(checker.Request{Node: n.Name(), Source: v1alpha1.SourceAPI, Tag: tag, At: at})
	return nil
}

// configRollout asks every node of a pool for a new config.
func (s *soak) configRollout() error {
	tag := s.tag()
	return s.patchPool(s.pool(), func(p *v1alpha1.MaintenancePool) { p.Spec.DesiredConfig = tag })
}

// killOperator kills a running replica and starts it again a little later:
// the leader's Lease runs out first when it was the leader.
func (s *soak) killOperator() error {
	running := s.replicas.running()
	if len(running) == 0 {
		return nil
	}
	i := running[s.pick(len(running))]
	s.replicas.kill(i)
	s.after(s.between(time.Second, 20*time.Second), func() { _ = s.replicas.start(i) })
	return nil
}

func (s *soak) killDaemon() error {
	n := s.node()
	n.KillDaemon()
	s.after(s.between(time.Second, 30*time.Second), func() { _ = n.StartDaemon(s.ctx) })
	return nil
}

// rebootByHand reboots a node outside kmaint, as a person or a kernel
// panic would.
func (s *soak) rebootByHand() error {
	n := s.node()
	go func() { _ = n.ForceReboot(s.ctx) }()
	return nil
}

// slowNode keeps a node's next reboots down past the operator's
// --node-return-timeout for a while.
func (s *soak) slowNode() error {
	n := s.node()
	s.cluster.SetRebootDelay(n.Name(), s.between(nodeReturnTimeout, 3*nodeReturnTimeout))
	s.after(s.between(time.Minute, 3*time.Minute), func() { s.cluster.SetRebootDelay(n.Name(), 0) })
	return nil
}

// restartAPIServer stops the API server for a few seconds and starts it
// again: every watch ends, and those older than etcd's last compaction
// (the soak compacts every few seconds) list again. The schedule waits
// for it, while the undoings already scheduled go on.
func (s *soak) restartAPIServer() error {
	return bed.RestartAPIServer(s.ctx, s.between(time.Second, 5*time.Second))
}

// cutOffDaemon drops or stalls a node's path to the API server for a
// while: its daemon runs on, unable to report or to hear.
func (s *soak) cutOffDaemon() error {
	n, state := s.node(), sim.LinkDropped
	if s.pick(2) == 0 {
		state = sim.LinkStalled
	}
	s.cluster.SetLink(n.Name(), state)
	s.after(s.between(5*time.Second, time.Minute), func() { s.cluster.SetLink(n.Name(), sim.LinkUp) })
	return nil
}

// fragmentMemory has a node's exporter report memory fragmented past the
// soak's RebootPolicy threshold: the policy asks for the node once the
// index has stayed there for its For. A reboot gives the node fresh memory.
func (s *soak) fragmentMemory() error { return s.fragmentMemoryOf(s.node()) }

func (s *soak) fragmentMemoryOf(n sim.Node) error {
	at := time.Now()
	if _, err := s.cluster.SetFragmentation(n.Name(), 0.95); err != nil {
		return err
	}
	s.checker.Requested(checker.Request{Node: n.Name(), Source: v1alpha1.SourceMetric, At: at})
	return nil
}

// stopPrometheus leaves the policy's and the pools' queries unanswered for
// a while: nothing is asked for, and nothing admitted on them, meanwhile.
func (s *soak) stopPrometheus() error {
	s.mu.Lock()
	if s.promStopped {
		s.mu.Unlock()
		return nil
	}
	s.promStopped = true
	s.mu.Unlock()
	s.cluster.Prometheus().Stop()
	s.after(s.between(10*time.Second, time.Minute), s.startPrometheus)
	return nil
}

func (s *soak) startPrometheus() {
	s.mu.Lock()
	stopped := s.promStopped
	s.promStopped = false
	s.mu.Unlock()
	if stopped {
		if err := s.cluster.Prometheus().Resume(); err != nil {
			s.problem(err)
		}
	}
}

func (s *soak) changeBudget() error {
	budget := intstr.FromInt32(int32(1 + s.pick(5)))
	return s.patchPool(s.pool(), func(p *v1alpha1.MaintenancePool) { p.Spec.MaxUnavailable = &budget })
}

func (s *soak) pausePool() error {
	pool := s.pool()
	if err := s.patchPool(pool, func(p *v1alpha1.MaintenancePool) { p.Spec.Paused = true }); err != nil {
		return err
	}
	s.after(s.between(5*time.Second, 40*time.Second), func() {
		_ = s.patchPool(pool, func(p *v1alpha1.MaintenancePool) { p.Spec.Paused = false })
	})
	return nil
}

// relabelNode moves a node into another pool, and back a little later.
func (s *soak) relabelNode() error {
	n, to := s.node(), s.pool()
	from, err := s.relabel(n.Name(), to)
	if err != nil || from == to {
		return err
	}
	s.after(s.between(10*time.Second, time.Minute), func() { _, _ = s.relabel(n.Name(), from) })
	return nil
}

// relabel puts a node in a pool and returns the pool it was in.
func (s *soak) relabel(node, pool string) (from string, err error) {
	err = patchNode(s.ctx, node, func(n client.Object) {
		labels := n.GetLabels()
		from = labels[poolLabel]
		labels[poolLabel] = pool
		n.SetLabels(labels)
	})
	return from, err
}

func (s *soak) patchPool(name string, change func(*v1alpha1.MaintenancePool)) error {
	var p v1alpha1.MaintenancePool
	if err := bed.Client.Get(s.ctx, client.ObjectKey{Name: name}, &p); err != nil {
		return err
	}
	base := p.DeepCopy()
	change(&p)
	return bed.Client.Patch(s.ctx, &p, client.MergeFrom(base))
}

// quiesce ends every fault: pending undoings run now, every replica and
// daemon runs, no node is slow and no pool paused.
func (s *soak) quiesce() error {
	s.mu.Lock()
	for _, t := range s.later {
		t.Stop()
	}
	undo := s.undo
	s.later, s.undo = nil, nil
	s.mu.Unlock()
	for _, u := range undo {
		u()
	}
	for i := range s.replicas.procs {
		if err := s.replicas.start(i); err != nil {
			return err
		}
	}
	for _, n := range s.cluster.Nodes() {
		s.cluster.SetRebootDelay(n.Name(), 0)
		s.cluster.SetLink(n.Name(), sim.LinkUp)
		if err := n.StartDaemon(s.ctx); err != nil {
			return err
		}
	}
	for _, pool := range s.pools {
		if err := s.patchPool(pool, func(p *v1alpha1.MaintenancePool) { p.Spec.Paused = false }); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.problems...)
}
