package sim

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/daemon"
	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/test/gen"
)

// memNode is a simulated node whose daemon runs in this process and whose
// journal lives in memory, so that thousands fit in one process.
type memNode struct {
	name    string
	cfg     *rest.Config
	kube    client.Client
	journal *journal.Memory
	timing  Timing
	host    nodeHost
	log     logr.Logger

	mu      sync.Mutex
	bootID  string
	reboots int
	ignore  bool
	// noDaemonOnBoot keeps the daemon from starting after a reboot.
	noDaemonOnBoot bool
	// down is true while the node reboots: nothing starts on it then.
	down bool
	// stopped is true once Stop was called: a reboot under way then ends
	// with the node down, no kubelet report and no daemon, so that a
	// teardown that stopped every daemon finds none started again after it.
	stopped bool
	// stop ends the running daemon; done is closed when it has ended.
	stop func()
	done chan struct{}
	// mapper and scheme are shared by all in-process daemons.
	mapper meta.RESTMapper
	scheme *runtime.Scheme
	// sentinelFile is the reboot sentinel file its daemon watches; empty
	// watches none.
	sentinelFile string
	// registry holds the running daemon's metrics: a new one per daemon
	// start, as a new process would have after a reboot.
	registry *prometheus.Registry
	// bootTime is when the current simulated boot began.
	bootTime time.Time
	// asked are the boots whose reboot a daemon asked for and journaled
	// that it did: a daemon started again in such a boot must not ask.
	asked map[string]bool
}

// nodeHost is what a memNode asks of the cluster it runs in: how its reboots
// go, and who hears of them.
type nodeHost interface {
	// isFast reports whether the node's reboots never show NotReady.
	isFast(name string) bool
	// rebootDelay is how much longer than its Timing the node stays down.
	rebootDelay(name string) time.Duration
	// beforeReboot and afterReboot are called as the node goes down and
	// once it is back.
	beforeReboot(name string)
	afterReboot(name string)
	// rebooted is told of every reboot as it begins, and of every ask
	// of a daemon that had asked already.
	rebooted(r Reboot)
}

func newMemNode(name, bootID string, cfg *rest.Config, kube client.Client, timing Timing, host nodeHost, log logr.Logger) *memNode {
	n := &memNode{name: name, cfg: cfg, kube: kube, timing: timing, host: host, log: log, bootID: bootID, bootTime: time.Now()}
	n.journal = journal.NewMemory(n.BootID)
	return n
}

func (n *memNode) Name() string { return n.name }

func (n *memNode) BootID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.bootID
}

func (n *memNode) Reboots() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.reboots
}

func (n *memNode) IgnoreReboots(ignore bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ignore = ignore
}

func (n *memNode) SetNoDaemonOnBoot(absent bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.noDaemonOnBoot = absent
}

// StartDaemon runs the real daemon for the node in a goroutine, unless it
// runs or the node is down for a reboot, which starts it when it is back.
func (n *memNode) StartDaemon(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stop != nil || n.down {
		return nil
	}
	n.startDaemonLocked(ctx)
	return nil
}

func (n *memNode) startDaemonLocked(ctx context.Context) {
	dctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	n.stop, n.done = cancel, done
	opts := daemon.Options{
		NodeName:      n.name,
		Journal:       askJournal{Memory: n.journal, n: n},
		Rebooter:      &memRebooter{n: n, boot: n.bootID},
		RebootTimeout: n.timing.DaemonRebootTimeout,
		MetricsAddr:   "0",
		ProbeAddr:     "0",
	}
	if n.sentinelFile != "" {
		opts.SentinelFile, opts.SentinelInterval = n.sentinelFile, time.Second
	}
	n.registry = prometheus.NewRegistry()
	// Thousands of daemons share this process and none has a kernel.
	cfg, log, name := n.cfg, n.log, n.name
	hooks := []daemon.Hook{
		daemon.WithBoot(n.bootID, n.bootTime),
		daemon.WithLogger(quietAfterStop(n.log, dctx)),
		daemon.WithRESTMapper(n.mapper),
		daemon.WithScheme(n.scheme),
		daemon.WithDuplicateControllerNames(),
	}
	run := func(reg *prometheus.Registry) error {
		return daemon.Run(dctx, cfg, opts, append(hooks, daemon.WithRegisterer(reg))...)
	}
	go func() {
		defer close(done)
		// A daemon that stops on an error starts again after a pause that
		// doubles up to a minute, as the kubelet restarts a crashed
		// container: 5000 daemons started at once find the API server so
		// busy that some caches do not sync in controller-runtime's two
		// minutes, and those daemons exit.
		pause := time.Second
		for reg := n.registry; ; {
			err := run(reg)
			if err == nil || dctx.Err() != nil {
				return
			}
			log.Error(err, "Daemon stopped; starting it again", "node", name, "after", pause)
			select {
			case <-dctx.Done():
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, time.Minute)
			// A new process has a new registry: the old one holds the
			// stopped daemon's metrics, which would refuse the new ones.
			reg = prometheus.NewRegistry()
			n.mu.Lock()
			n.registry = reg
			n.mu.Unlock()
		}
	}()
}

// KillDaemon stops the daemon and waits until it has.
func (n *memNode) KillDaemon() {
	n.mu.Lock()
	stop, done := n.stop, n.done
	n.stop, n.done = nil, nil
	n.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

func (n *memNode) RequestReboot(reason string) error {
	_, err := daemon.RequestReboot(n.journal, reason, 0, time.Now())
	return err
}

func (n *memNode) Stop() {
	n.mu.Lock()
	n.stopped = true
	n.mu.Unlock()
	n.KillDaemon()
}

// ForceReboot reboots the node now and returns once it is back.
func (n *memNode) ForceReboot(ctx context.Context) error {
	n.reboot(ctx, "")
	return nil
}

// memRebooter performs the simulated reboot of a memNode for one daemon,
// started in boot.
type memRebooter struct {
	n      *memNode
	boot   string
	asked  bool
	askedM sync.Mutex
}

// Reboot returns at once, as logind does; the node goes down shortly after.
// A daemon asks once per boot: a second ask of the same daemon, or an ask
// of a daemon started again in a boot whose reboot another asked for and
// journaled, counts as a reboot of its own, so that it shows. (A daemon
// stopped between its ask and its journal entry asks again when started
// in the same boot, as the daemon means to: the reboot under way answers
// both.)
func (r *memRebooter) Reboot(ctx context.Context) error {
	n := r.n
	r.askedM.Lock()
	again := r.asked
	r.asked = true
	r.askedM.Unlock()
	n.mu.Lock()
	again = again || n.asked[r.boot]
	ignore := n.ignore
	if again {
		n.reboots++
	}
	n.mu.Unlock()
	if again {
		n.host.rebooted(Reboot{Node: n.name, From: r.boot, At: time.Now(), ByDaemon: true, Again: true})
	}
	if ignore || again {
		return nil
	}
	go n.reboot(context.WithoutCancel(ctx), r.boot)
	return nil
}

// askJournal is the node's journal as its daemons write it: it notes each
// boot whose reboot a daemon journaled having asked for.
type askJournal struct {
	*journal.Memory
	n *memNode
}

func (j askJournal) Append(e journal.Entry) error {
	if err := j.Memory.Append(e); err != nil {
		return err
	}
	if e.Kind == journal.KindRebooting {
		n := j.n
		n.mu.Lock()
		if n.asked == nil {
			n.asked = map[string]bool{}
		}
		n.asked[n.bootID] = true
		n.mu.Unlock()
	}
	return nil
}

// reboot takes the node down for the reboot time and brings it back with a
// new boot ID and a fresh daemon. Like logind, the node reboots once however
// often it is asked in one boot (from; empty for a reboot by hand): an ask
// of a boot that is over, or made while the node goes down, changes nothing.
func (n *memNode) reboot(ctx context.Context, from string) {
	// The reboot's duration counts from the moment it was asked for, as a
	// real one's does: shutting the daemon down is part of it.
	back := time.After(n.timing.jittered() + n.host.rebootDelay(n.name))
	n.mu.Lock()
	if n.down || from != "" && from != n.bootID {
		n.mu.Unlock()
		return
	}
	n.down = true
	n.mu.Unlock()
	n.host.beforeReboot(n.name)
	n.KillDaemon()
	n.mu.Lock()
	n.reboots++
	old := n.bootID
	n.bootID = uuid.NewString()
	n.bootTime = time.Now()
	boot := n.bootID
	n.mu.Unlock()
	n.host.rebooted(Reboot{Node: n.name, From: old, To: boot, At: time.Now(), ByDaemon: from != ""})
	n.journal.Boot()
	if !n.host.isFast(n.name) {
		n.report(ctx, boot, false)
	}
	// The reboot's duration is the simulation's, not a test's wait.
	<-back
	n.mu.Lock()
	stopped := n.stopped
	n.mu.Unlock()
	if stopped {
		return
	}
	n.report(ctx, boot, true)
	n.mu.Lock()
	n.down = false
	if !n.noDaemonOnBoot && !n.stopped {
		n.startDaemonLocked(ctx)
	}
	n.mu.Unlock()
	n.host.afterReboot(n.name)
}

// Reboot is one reboot of a simulated node, as it began.
type Reboot struct {
	Node string
	// From is the boot the node left, To the one it came back in.
	From, To string
	At       time.Time
	// ByDaemon is true when the node's daemon asked for the reboot, false
	// for one by hand (ForceReboot).
	ByDaemon bool
	// Again is true for an ask to reboot a boot whose reboot was asked for
	// already: by the same daemon, or, journaled, by one before it in the
	// boot. The node does not reboot twice, but the ask is told.
	Again bool
}

// report has the node's kubelet report its boot and readiness until the
// API server takes it, as a kubelet's status updates go on until they do:
// one given up while the API server was down for a minute left the node
// NotReady for good. It gives up only when the node is stopped or ctx ends.
func (n *memNode) report(ctx context.Context, boot string, ready bool) {
	for {
		err := gen.SetBoot(ctx, n.kube, n.name, boot, ready)
		if err == nil {
			return
		}
		n.mu.Lock()
		stopped := n.stopped
		n.mu.Unlock()
		if stopped || ctx.Err() != nil {
			return
		}
		n.log.Error(err, "Simulated kubelet could not report its node's status; trying again", "node", n.name, "ready", ready)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// Timing is how long simulated things take.
type Timing struct {
	// Reboot is how long a node is down.
	Reboot time.Duration
	// Jitter is added to Reboot, uniformly between 0 and Jitter.
	Jitter time.Duration
	// DaemonRebootTimeout is the daemon's --reboot-timeout.
	DaemonRebootTimeout time.Duration
}

func (t Timing) jittered() time.Duration {
	d := t.Reboot
	if t.Jitter > 0 {
		d += time.Duration(rand.Int64N(int64(t.Jitter)))
	}
	return d
}

// Gather implements prometheus.Gatherer with the running daemon's metrics;
// a node whose daemon is down has none, as a scrape of it would find.
func (n *memNode) Gather() ([]*dto.MetricFamily, error) {
	n.mu.Lock()
	reg, running := n.registry, n.stop != nil
	n.mu.Unlock()
	if reg == nil || !running {
		return nil, nil
	}
	return reg.Gather()
}
