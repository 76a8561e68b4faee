package soak_test

import (
	"context"
	crand "crypto/rand"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/promtest"
	"github.com/kmaint/kmaint/test/sim"
	"github.com/kmaint/kmaint/test/soak/checker"
	"github.com/kmaint/kmaint/test/testbed"
)

var bed *testbed.Bed

func TestMain(m *testing.M) {
	os.Exit(harness.Main(m, &bed, testbed.WithCompactionEvery(compaction)))
}

var (
	duration   = flag.Duration("soak.duration", 3*time.Minute, "how long faults and requests are made, at least: on until -soak.min-reboots reboots were seen, for at most twice as long again; then they stop and every request must end")
	seed       = flag.Uint64("soak.seed", 1, "the seed of the random schedule; a failing run names it, to be replayed")
	nodes      = flag.Int("soak.nodes", 24, "nodes per pool (three pools)")
	pace       = flag.Duration("soak.pace", 300*time.Millisecond, "mean time between two requests the schedule makes")
	faultPace  = flag.Duration("soak.fault-pace", 5*time.Second, "mean time between two faults the schedule makes")
	results    = flag.String("soak.results", "", "directory the run's result JSON is written to; none when empty")
	minReboots = flag.Int("soak.min-reboots", 200, "the least reboots the run must see: fewer, and it does not show what it should")
	minEach    = flag.Int("soak.min-each", 1, "the least times each kind of request and fault is made: the schedule makes up, as the run goes, what its draws leave short, so that each kind has its share by 90% of the run")
)

const (
	poolLabel      = "pool"
	leaseNamespace = "kmaint-system"
	// nodeReturnTimeout is the operator's --node-return-timeout: slow
	// nodes stay down longer.
	nodeReturnTimeout = 20 * time.Second
	// endBound is how long every request has to end once the faults stop.
	endBound = 5 * time.Minute
	// stretch bounds how much longer than -soak.duration the schedule
	// goes on for want of -soak.min-reboots reboots: a machine other work
	// hogs reboots fewer nodes in the same time, and the run must still
	// show what it should; one that cannot reach them in three times the
	// duration fails.
	stretch = 2
	// compaction is how often etcd is compacted: a client whose watch
	// ended lists again unless it watches again within moments.
	compaction = 10 * time.Second
)

// TestSoak runs the whole reboot path for a while on a simulated cluster of
// three pools, the operator as two real processes with leader election,
// while a seeded random schedule makes requests and faults land together,
// then stops the faults and checks the whole history (package checker).
func TestSoak(t *testing.T) {
	t.Logf("soak: seed %d, %s, %d nodes in 3 pools (replay with -soak.seed=%d -soak.duration=%s)", *seed, *duration, 3**nodes, *seed, *duration)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("soak failed: replay with go test ./test/soak -run TestSoak -soak.seed=%d -soak.duration=%s -soak.nodes=%d -soak.pace=%s -soak.fault-pace=%s -soak.min-each=%d",
				*seed, *duration, *nodes, *pace, *faultPace, *minEach)
		}
	})
	pools := []string{"soak-a", "soak-b", "soak-c"}
	setUpAt := time.Now()
	s := setUp(t, pools, *nodes, func(i int) int { return 3 + i%2 })
	ctx, c, check, ops := s.ctx, s.cluster, s.checker, s.replicas

	start := s.start
	s.run(t, start.Add(*duration))
	quiet := time.Now()
	if err := s.quiesce(); err != nil {
		t.Fatalf("end the faults: %v", err)
	}
	// left is what kept the soak from its end at the last look.
	var left string
	err := wait.PollUntilContextTimeout(ctx, time.Second, endBound, true, func(ctx context.Context) (bool, error) {
		ops.sample(start)
		if open := check.Unmet(); open > 0 {
			left = fmt.Sprintf("%d requests the soak made have not ended", open)
			return false, nil
		}
		left = unsettled(ctx)
		return left == "", nil
	})
	ended := time.Now()
	violations := check.Final()
	s.replicas.mu.Lock()
	verdict, grew := flat(s.replicas.samples, ended.Sub(start))
	s.replicas.mu.Unlock()
	violations = append(violations, grew...)
	if err != nil {
		violations = append(violations, checker.Violation{At: ended, Invariant: checker.End,
			Message: fmt.Sprintf("not every request ended, and every node back in service, within %s of the faults' end: %s", endBound, left)})
	}
	res := s.result(start, quiet, ended, violations)
	res.Blind = check.Blind()
	res.Checked = check.Checked()
	res.Excused = check.Excused()
	res.Ends = check.Ends()
	res.Timeline = s.timelineWith(check.RebootTimes())
	res.OperatorFlat = verdict
	if *results != "" {
		if err := res.save(*results); err != nil {
			t.Error(err)
		}
	}
	t.Logf("soak: %d reboots by daemons, %d by hand, %d requests; done %v", res.RebootsByDaemon, res.RebootsByHand, res.Requests, res.Done)
	t.Logf("soak: checked %v; excused %v; requests ended %v", res.Checked, excusedCounts(res.Excused), res.Ends)
	t.Logf("soak: set up in %s; waited %s after the faults stopped for every request to end (bound %s)",
		start.Sub(setUpAt).Round(time.Second), ended.Sub(quiet).Round(time.Second), endBound)
	if res.RebootsByDaemon+res.RebootsByHand < *minReboots {
		t.Errorf("%d reboots, fewer than -soak.min-reboots=%d: the run does not show what it should", res.RebootsByDaemon+res.RebootsByHand, *minReboots)
	}
	for _, a := range slices.Concat(requests(), faults()) {
		if res.Done[a.kind] < *minEach {
			t.Errorf("the schedule made %s %d times, fewer than -soak.min-each=%d: the run does not show what it should", a.kind, res.Done[a.kind], *minEach)
		}
	}
	for _, v := range violations {
		t.Errorf("invariant broken: %s", v)
	}
	if len(violations) > 0 {
		dumpHeld(t, c)
	}
}

// setUp starts a soak's cluster (the pools, of perPool nodes each, with the
// budgets budget gives the i-th), its policies, its Alertmanager and the
// operator's two replicas, and a checker watching them all. What it
// creates goes when t ends.
func setUp(t *testing.T, pools []string, perPool int, budget func(i int) int) *soak {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	promtest.Binary(t) // skip (or fail on CI) without Prometheus
	bin := harness.BuildOperator(t)
	if err := bed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	check := checker.New(poolLabel, time.Now)
	if err := check.Watch(ctx, bed.Config, bed.Scheme); err != nil {
		t.Fatal(err)
	}
	var specs []sim.PoolSpec
	for i, name := range pools {
		specs = append(specs, sim.PoolSpec{Name: name, Nodes: perPool, MaxUnavailable: intstr.FromInt32(int32(budget(i)))})
	}
	files, err := newSentinels(t.TempDir(), pools, perPool)
	if err != nil {
		t.Fatal(err)
	}
	webhooks := []string{harness.FreeAddr(t), harness.FreeAddr(t)}
	am := newAlertmanager(webhooks, crand.Text(), *seed)
	c, err := sim.Start(ctx, bed, sim.Config{
		Pools:         specs,
		Journal:       sim.Memory,
		Timing:        sim.Timing{Reboot: 2 * time.Second, Jitter: time.Second, DaemonRebootTimeout: 30 * time.Second},
		PodsPerNode:   2,
		Metrics:       &sim.MetricsConfig{Interval: time.Second},
		SentinelFiles: files,
		Log:           ctrl.Log.WithName("sim"),
		OnReboot: func(r sim.Reboot) {
			check.Rebooted(checker.Reboot{Node: r.Node, From: r.From, To: r.To, At: r.At, ByDaemon: r.ByDaemon, Again: r.Again})
			if !r.Again {
				// What a reboot clears: /var/run, and the trouble alerted on.
				files.cleared(r.Node)
				am.resolve(r.Node)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	for _, o := range []client.Object{fragmentationPolicy(pools), alertPolicy(pools), alertToken(am.token)} {
		if err := bed.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), o) })
	}
	go am.run(ctx)
	ops := newReplicas(t, bin, 2, func(i int) []string { return []string{"--alert-webhook-bind-address=" + webhooks[i]} },
		"--drain-poll-interval=200ms", "--node-return-timeout="+nodeReturnTimeout.String(),
		"--daemon-confirm-timeout=1m", "--prometheus-url="+c.Prometheus().URL(),
		"--alert-webhook-token-secret="+leaseNamespace+"/"+alertTokenSecret, "--alert-webhook-cert-hosts=127.0.0.1")
	for i := range 2 {
		if err := ops.start(i); err != nil {
			t.Fatal(err)
		}
	}
	return &soak{start: time.Now(), ctx: ctx, rng: rand.New(rand.NewPCG(*seed, *seed^0x9e3779b97f4a7c15)), cluster: c, replicas: ops,
		checker: check, pools: pools, done: map[string]int{}, sentinels: files, alerts: am}
}

// dumpHeld logs, for every node kmaint still holds, what the node says and
// what the simulation knows of it: where a failing run stopped.
func dumpHeld(t *testing.T, c *sim.Cluster) {
	var nodes corev1.NodeList
	if err := bed.Client.List(context.Background(), &nodes); err != nil {
		t.Logf("list nodes: %v", err)
		return
	}
	for _, n := range nodes.Items {
		if _, held := n.Annotations[protocol.Admitted]; !held {
			continue
		}
		sn := c.Node(n.Name)
		var ready corev1.NodeCondition
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = c
			}
		}
		t.Logf("held node %s: boot %s (simulated: %s, %d reboots), unschedulable %v, Ready %s since %s",
			n.Name, n.Status.NodeInfo.BootID, sn.BootID(), sn.Reboots(), n.Spec.Unschedulable, ready.Status, ready.LastTransitionTime.Format(time.TimeOnly))
		for k, v := range n.Annotations {
			if strings.HasPrefix(k, protocol.Prefix) {
				t.Logf("  %s: %s", k, v)
			}
		}
	}
}

// run does what the schedule draws until the deadline (and on past it,
// for at most stretch times -soak.duration, while fewer than
// -soak.min-reboots reboots were seen), sampling the
// replicas every ten seconds: a request every -soak.pace and a fault every
// -soak.fault-pace, on average, each at exponential gaps (things land at
// random moments, sometimes together). A kind behind its share of
// -soak.min-each comes before the draw (due).
func (s *soak) run(t *testing.T, deadline time.Time) {
	start := deadline.Add(-*duration)
	clocks := []*clock{{acts: requests(), mean: *pace}, {acts: faults(), mean: *faultPace}}
	for _, c := range clocks {
		c.next = time.Now().Add(s.gap(c.mean))
	}
	nextSample := time.Now()
	limit, stretched := deadline.Add(stretch**duration), false
	for {
		c := slices.MinFunc(clocks, func(a, b *clock) int { return a.next.Compare(b.next) })
		if c.next.After(deadline) {
			byDaemon, byHand := s.checker.Reboots()
			if byDaemon+byHand >= *minReboots || c.next.After(limit) {
				return
			}
			if !stretched {
				stretched = true
				t.Logf("soak: %d reboots in %s, fewer than -soak.min-reboots=%d: the schedule goes on until there are, for at most %s more",
					byDaemon+byHand, *duration, *minReboots, stretch**duration)
			}
		}
		if time.Now().After(nextSample) {
			s.replicas.sample(start)
			nextSample = time.Now().Add(10 * time.Second)
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(time.Until(c.next)):
		}
		c.next = c.next.Add(s.gap(c.mean))
		a := s.draw(c.acts, due(time.Since(start), *duration, *minEach))
		if err := a.do(s); err != nil {
			t.Logf("soak: %s: %v", a.kind, err)
			continue
		}
		s.count(a.kind)
	}
}

// clock is one list of actions and when the next is due.
type clock struct {
	acts []action
	mean time.Duration
	next time.Time
}

func (s *soak) gap(mean time.Duration) time.Duration {
	return time.Duration(s.rng.ExpFloat64() * float64(mean))
}

// draw picks the next thing to do: the first kind (in a random order)
// made fewer than due times, or else one by weight.
func (s *soak) draw(acts []action, due int) action {
	for _, i := range s.rng.Perm(len(acts)) {
		if s.made(acts[i].kind) < due {
			return acts[i]
		}
	}
	total := 0
	for _, a := range acts {
		total += a.weight
	}
	n := s.pick(total)
	for _, a := range acts {
		if n -= a.weight; n < 0 {
			return a
		}
	}
	return acts[len(acts)-1]
}

// due is how many times each kind should have been made after elapsed of
// a run of d: its share of least, all of it by 90% of the run, spread over
// the run so that rare kinds do not all land at its end.
func due(elapsed, d time.Duration, least int) int {
	share := math.Ceil(float64(least) * elapsed.Seconds() / (0.9 * d.Seconds()))
	return min(least, int(share))
}

func (s *soak) made(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done[kind]
}

func (s *soak) count(kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done[kind]++
	s.timeline = append(s.timeline, moment{Seconds: time.Since(s.start).Seconds(), Kind: kind})
}

// unsettled says what keeps the soak from its end: the NodeMaintenances
// not ended, and the nodes kmaint still holds, has cordoned or has a
// request of; "" when there is none.
func unsettled(ctx context.Context) string {
	var nms v1alpha1.NodeMaintenanceList
	if err := bed.Client.List(ctx, &nms); err != nil {
		return fmt.Sprintf("list NodeMaintenances: %v", err)
	}
	var left []string
	for _, nm := range nms.Items {
		if nm.Status.Phase != v1alpha1.PhaseSucceeded && nm.Status.Phase != v1alpha1.PhaseFailed {
			left = append(left, fmt.Sprintf("NodeMaintenance %s (node %s, %s) is %q: %s", nm.Name, nm.Spec.NodeName, nm.Spec.Source, nm.Status.Phase, nm.Status.Message))
		}
	}
	var nodes corev1.NodeList
	if err := bed.Client.List(ctx, &nodes); err != nil {
		return fmt.Sprintf("list nodes: %v", err)
	}
	for _, n := range nodes.Items {
		var held []string
		if n.Spec.Unschedulable {
			held = append(held, "unschedulable")
		}
		for _, key := range []string{protocol.RebootRequested, protocol.Admitted, protocol.RebootApproved, protocol.Settling, protocol.Cordoned} {
			if v, ok := n.Annotations[key]; ok && (v != "" || key != protocol.RebootRequested) {
				held = append(held, fmt.Sprintf("%s=%s", key, v))
			}
		}
		if len(held) > 0 {
			left = append(left, fmt.Sprintf("node %s (boot %s): %s", n.Name, n.Status.NodeInfo.BootID, strings.Join(held, ", ")))
		}
	}
	return strings.Join(left, "; ")
}

// fragmentationPolicy asks for a reboot of a node of the pools whose memory
// stays fragmented for 3 seconds, as the sample policy does for hours.
func fragmentationPolicy(pools []string) *v1alpha1.RebootPolicy {
	most := intstr.FromInt32(3)
	return &v1alpha1.RebootPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "soak-fragmentation"},
		Spec: v1alpha1.RebootPolicySpec{
			NodeSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: poolLabel, Operator: metav1.LabelSelectorOpIn, Values: pools}}},
			Prometheus: &v1alpha1.PrometheusTrigger{
				Query:       sim.FragmentationRecord,
				Threshold:   "0.9",
				Comparison:  v1alpha1.GreaterThan,
				For:         &metav1.Duration{Duration: 3 * time.Second},
				Interval:    &metav1.Duration{Duration: time.Second},
				NodeLabel:   "instance",
				MatchNodeBy: v1alpha1.MatchNodeAddress,
			},
			Cooldown:              &metav1.Duration{Duration: 10 * time.Second},
			MaxConcurrentRequests: &most,
		},
	}
}

func patchNode(ctx context.Context, name string, change func(client.Object)) error {
	var n corev1.Node
	if err := bed.Client.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		return err
	}
	base := n.DeepCopy()
	change(&n)
	return bed.Client.Patch(ctx, &n, client.MergeFrom(base))
}

func TestDueSpreadsEachKindsLeastOverTheRun(t *testing.T) {
	d := 40 * time.Minute
	for _, c := range []struct {
		elapsed     time.Duration
		least, want int
	}{
		{0, 20, 0}, {d * 45 / 100, 20, 10}, {d * 9 / 10, 20, 20}, {d, 20, 20},
		{time.Second, 1, 1}, {0, 1, 0},
	} {
		if got := due(c.elapsed, d, c.least); got != c.want {
			t.Errorf("due(%s of %s, %d) = %d, want %d", c.elapsed, d, c.least, got, c.want)
		}
	}
}
