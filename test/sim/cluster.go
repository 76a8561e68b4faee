package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kmaint/kmaint/api/scheme"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/operator/notify"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/node"
	"github.com/kmaint/kmaint/test/shape"
	"github.com/kmaint/kmaint/test/testbed"
)

// JournalMode picks how simulated nodes journal.
type JournalMode string

// The journal modes.
const (
	// Journald runs a real systemd-journald and a daemon process per node,
	// in the node's own mount namespace. Needs root; fits tens of nodes.
	Journald JournalMode = "journald"
	// Memory runs each node's daemon in this process with an in-memory
	// journal that keeps the same boot rules; fits thousands of nodes.
	Memory JournalMode = "memory"
)

// PoolSpec is one pool of the simulated cluster.
type PoolSpec struct {
	Name           string
	Nodes          int
	MaxUnavailable intstr.IntOrString
	DrainTimeout   time.Duration
	// OnDrainTimeout is the pool's drain.onTimeout; empty leaves the
	// API's default.
	OnDrainTimeout v1alpha1.DrainTimeoutAction
	// Windows are the pool's maintenance windows; none admits at any time.
	Windows []v1alpha1.MaintenanceWindow
	// SettleTime and HealthChecks guard the pool's reboots (see
	// UnhealthySeries for a check on the simulated nodes).
	SettleTime   time.Duration
	HealthChecks *v1alpha1.HealthChecks
	// Hooks are the pool's hooks; its Jobs run with Config.HooksNamespace
	// (see StageProgram and CheckProgram).
	Hooks *v1alpha1.Hooks
	// Silences are the pool's Alertmanager silences.
	Silences *v1alpha1.Silences
}

// Config describes a simulated cluster.
type Config struct {
	Pools   []PoolSpec
	Journal JournalMode
	Timing  Timing
	// PodsPerNode workload pods are created on each node; every pod
	// belongs to one of a few apps, each with a PodDisruptionBudget
	// allowing one pod of it down at a time.
	PodsPerNode int
	// AgentPodsPerNode DaemonSet pods run on each node, of as many
	// DaemonSets that exist (see nodeAgents): drains leave them be.
	AgentPodsPerNode int
	// Realistic makes every Node look like a cloud node (see shapeNode:
	// about 14 KB of JSON with 50 images) and every pod like a
	// Deployment's (see shapeWorkloadPod), and spreads the workload over
	// realisticApps apps, each with a budget of 10% of its pods, in
	// namespace shop.
	Realistic bool
	// StatusRefresh, when set, has each simulated kubelet write its Node's
	// condition heartbeats at about this period, as real kubelets do at
	// least every nodeStatusReportFrequency (5 minutes by default): the
	// background churn of Node updates a real cluster has. Off when zero.
	StatusRefresh time.Duration
	// DeferDaemons starts the cluster with no daemon running; StartDaemons
	// starts them. A benchmark writes a year of history in between, as a
	// real cluster's history is there before its daemons' last start,
	// and thousands of daemons starting do not compete with it for the API
	// server.
	DeferDaemons bool
	// Dir holds journald nodes' disks; a temporary directory by default.
	Dir string
	// Log receives the cluster's and the daemons' logs.
	Log logr.Logger
	// NodeLog receives journald nodes' process output.
	NodeLog io.Writer
	// DaemonRequests, when set, counts the API requests of in-process
	// daemons, at the client.
	DaemonRequests *atomic.Int64
	// DaemonConfig, when set, is the in-process daemons' rest config in
	// place of the test bed's: a user of their own tells their requests
	// apart from everyone else's in the API server's audit log.
	DaemonConfig *rest.Config
	// Metrics, when set, gives every node a node_exporter and the cluster a
	// real Prometheus, which the operator asks (see MetricsConfig).
	Metrics *MetricsConfig
	// SentinelFiles gives the daemons of these nodes (by name) a reboot
	// sentinel file to watch (--sentinel-file), looked at every second;
	// writing it is the host's package tools saying the node needs a
	// reboot. A simulated reboot leaves it there, as a host that recreates
	// it at boot would.
	SentinelFiles map[string]string
	// Notify, when its URLsFile is set, has the operator StartOperator
	// starts send notifications.
	Notify notify.Options
	// HooksNamespace, when set, is where the operator runs the pools' hook
	// Jobs, and the cluster runs them (jobs.go).
	HooksNamespace string
	// OnReboot, when set, is told of every reboot of a memory node as it
	// begins (and of a daemon's second ask in one boot), from the node's
	// own goroutine: what a checker needs to hold every reboot against
	// the approvals kmaint wrote.
	OnReboot func(Reboot)
}

// Node is a simulated node.
type Node interface {
	Name() string
	BootID() string
	// Reboots counts the reboots the node's daemon asked for and got.
	Reboots() int
	StartDaemon(ctx context.Context) error
	KillDaemon()
	// RequestReboot runs `kmaint-daemon request-reboot` on the node.
	RequestReboot(reason string) error
	// IgnoreReboots makes the node ignore its daemon's reboots, as a
	// machine whose reboot hangs would.
	IgnoreReboots(ignore bool)
	// ForceReboot reboots the node by hand, whatever kmaint says, and
	// returns once it is back.
	ForceReboot(ctx context.Context) error
	// SetNoDaemonOnBoot keeps the node's daemon from starting when the node
	// comes back from its next reboots (true), as a DaemonSet pod that never
	// comes back would, or lets it start again (false). StartDaemon starts
	// it by hand either way.
	SetNoDaemonOnBoot(absent bool)
	// Stop stops the node's daemon for good, at the end of a run: a reboot
	// under way ends with the node still down and no daemon started.
	Stop()
}

// Cluster is a running simulated cluster.
type Cluster struct {
	Bed    *testbed.Bed
	Config Config

	ctx    context.Context
	cancel context.CancelFunc
	nodes  []Node
	// jobs runs the hook Jobs when Config.HooksNamespace is set.
	jobs   *hookJobs
	byName map[string]Node
	dir    string

	mu       sync.Mutex
	operator *Operator
	fast     map[string]bool
	// delays keep nodes down longer than the Timing says (SetRebootDelay).
	delays map[string]time.Duration
	// links are the memory nodes' paths to the API server (SetLink).
	links map[string]*link
	// mapper is the in-process daemons' REST mapper: one discovery for all.
	mapper meta.RESTMapper
	// scheme is the in-process daemons' scheme: one for all.
	scheme *runtime.Scheme
	// addresses are the nodes' InternalIPs, by name.
	addresses map[string]string
	// subnet is the second octet of the cluster's 10.x.0.0/16: one no
	// node on the API server uses yet, so that clusters sharing an API
	// server (tests in one package) never give two nodes one address.
	subnet int
	// metrics are the node exporters and Prometheus, when Config.Metrics.
	metrics *metrics
	// daemonSets own the nodes' agent pods.
	daemonSets []*appsv1.DaemonSet
}

// appsPerNamespace is how many apps (and budgets) the workload spreads over.
const appsPerNamespace = 4

// workloadNamespace holds the simulated workload.
const workloadNamespace = "workload"

// realisticApps is how many apps a realistic workload spreads over, in
// realisticNamespace: with 10% budgets, hundreds of nodes' pods leave a
// few per app at a time, as in a cluster of many teams' services, rather
// than one per app, which would make the budgets, not kmaint, set the pace.
const (
	realisticApps      = 40
	realisticNamespace = "shop"
)

// startWorkers is how many nodes start at once: the API server, not this
// process, is what they wait for.
const startWorkers = 8

// Start builds the cluster: pools, nodes with kubelets and daemons, and the
// workload. The operator is started separately.
func Start(ctx context.Context, bed *testbed.Bed, cfg Config) (*Cluster, error) {
	if cfg.Journal == "" {
		cfg.Journal = Memory
	}
	if cfg.Timing.DaemonRebootTimeout == 0 {
		cfg.Timing.DaemonRebootTimeout = time.Minute
	}
	// A test run to be read (KMAINT_TEST_LOG) shows the simulation's own
	// logs and the nodes' (their daemons') with the operator's.
	debug := os.Getenv("KMAINT_TEST_LOG") != ""
	if cfg.Log.GetSink() == nil && debug {
		cfg.Log = ctrl.Log.WithName("sim")
	}
	if cfg.NodeLog == nil {
		cfg.NodeLog = io.Discard
		if debug {
			cfg.NodeLog = os.Stderr
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &Cluster{Bed: bed, Config: cfg, ctx: ctx, cancel: cancel, byName: map[string]Node{}, dir: cfg.Dir, fast: map[string]bool{}, delays: map[string]time.Duration{}, links: map[string]*link{}, addresses: map[string]string{}}
	if err := c.start(); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start() error {
	cs, err := kubernetes.NewForConfig(c.Bed.Config)
	if err != nil {
		return err
	}
	if err := gen.FinishPodDeletions(c.ctx, cs); err != nil {
		return fmt.Errorf("simulated kubelets: %w", err)
	}
	if c.subnet, err = freeSubnet(c.ctx, c.Bed.Client); err != nil {
		return err
	}
	dcfg := c.daemonConfig("")
	httpClient, err := rest.HTTPClientFor(dcfg)
	if err != nil {
		return err
	}
	if c.mapper, err = apiutil.NewDynamicRESTMapper(dcfg, httpClient); err != nil {
		return err
	}
	if c.scheme, err = scheme.New(); err != nil {
		return err
	}
	if c.dir == "" && c.Config.Journal == Journald {
		if c.dir, err = os.MkdirTemp("", "kmaint-sim-"); err != nil {
			return err
		}
	}
	if err := c.createWorkloadBudgets(); err != nil {
		return err
	}
	if c.Config.AgentPodsPerNode > 0 {
		if c.daemonSets, err = c.createNodeAgents(c.Config.AgentPodsPerNode); err != nil {
			return err
		}
	}
	if c.Config.HooksNamespace != "" {
		if err := c.runHookJobs(); err != nil {
			return err
		}
	}
	type planned struct{ name, pool string }
	var plan []planned
	for _, p := range c.Config.Pools {
		pool := gen.Pool(p.Name, p.MaxUnavailable)
		if p.DrainTimeout > 0 {
			pool.Spec.Drain.Timeout = &metav1.Duration{Duration: p.DrainTimeout}
		}
		pool.Spec.Drain.OnTimeout = p.OnDrainTimeout
		pool.Spec.Windows = p.Windows
		if p.SettleTime > 0 {
			pool.Spec.SettleTime = &metav1.Duration{Duration: p.SettleTime}
		}
		pool.Spec.HealthChecks = p.HealthChecks
		pool.Spec.Silences = p.Silences
		pool.Spec.Hooks = p.Hooks
		if err := c.Bed.Client.Create(c.ctx, pool); err != nil {
			return fmt.Errorf("create pool %s: %w", p.Name, err)
		}
		for i := range p.Nodes {
			name := NodeName(p.Name, i)
			c.addresses[name] = nodeAddress(c.subnet, len(plan))
			plan = append(plan, planned{name, p.Name})
		}
	}
	// Journald nodes are processes with mounts of their own: one at a time.
	workers := startWorkers
	if c.Config.Journal == Journald {
		workers = 1
	}
	c.nodes = make([]Node, len(plan))
	errs := make([]error, len(plan))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				c.nodes[i], errs[i] = c.startNode(plan[i].name, plan[i].pool, i)
			}
		})
	}
	for i := range plan {
		if c.ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		// Stop stops only what started.
		c.nodes = slices.DeleteFunc(c.nodes, func(n Node) bool { return n == nil })
		return err
	}
	for _, n := range c.nodes {
		c.byName[n.Name()] = n
	}
	// The disruption controller starts once the nodes' pods exist: it
	// recounts every budget of the namespace on each pod change and
	// writes those whose status changed, which while thousands of pods
	// are created one by one is a growing count and a stream of budget
	// writes for nothing: nothing is evicted before the cluster has
	// started.
	if err := runDisruptionController(c.ctx, cs); err != nil {
		return fmt.Errorf("simulated disruption controller: %w", err)
	}
	if c.Config.StatusRefresh > 0 {
		go c.refreshStatus(c.Config.StatusRefresh)
	}
	if c.Config.Metrics != nil {
		return c.startMetrics(*c.Config.Metrics, c.addresses, c.initialFragmentation)
	}
	return nil
}

// initialFragmentation is a node's fragmentation when the cluster starts:
// low, and not the same on every node.
func (c *Cluster) initialFragmentation(name string) float64 {
	i := slices.IndexFunc(c.nodes, func(n Node) bool { return n.Name() == name })
	return FreshBootFragmentation + 0.015*float64(i%7)
}

// nodeAddress is the InternalIP of the cluster's i-th node (from 0), in
// 10.subnet.0.0/16.
func nodeAddress(subnet, i int) string {
	k := i + 1
	return fmt.Sprintf("10.%d.%d.%d", subnet, k>>8&255, k&255)
}

// freeSubnet picks the lowest 10.x.0.0/16 no node on the API server has an
// address in.
func freeSubnet(ctx context.Context, c client.Client) (int, error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return 0, fmt.Errorf("list nodes: %w", err)
	}
	used := map[int]bool{}
	for _, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			var x, y, z, w int
			if _, err := fmt.Sscanf(a.Address, "%d.%d.%d.%d", &x, &y, &z, &w); err == nil && x == 10 {
				used[y] = true
			}
		}
	}
	for subnet := range 256 {
		if !used[subnet] {
			return subnet, nil
		}
	}
	return 0, errors.New("every 10.x.0.0/16 is used by some node")
}

// startNode registers the cluster's i-th Node, creates its pods, and starts
// its daemon.
func (c *Cluster) startNode(name, pool string, i int) (Node, error) {
	boot := uuid.NewString()
	addr := c.addresses[name]
	kn := gen.Node(name, gen.Labels("pool", pool), gen.BootID(boot))
	kn.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: addr}, {Type: corev1.NodeHostName, Address: name}}
	if c.Config.Realistic {
		kn = shape.RealisticNode(name, pool, i, addr, boot)
	}
	if err := gen.CreateNode(c.ctx, c.Bed.Client, kn); err != nil {
		return nil, err
	}
	if err := c.createAgentPods(name, addr); err != nil {
		return nil, err
	}
	if err := c.createPods(name); err != nil {
		return nil, err
	}
	var n Node
	switch c.Config.Journal {
	case Memory:
		mn := newMemNode(name, boot, c.daemonConfig(name), c.Bed.Client, c.Config.Timing, c, c.Config.Log)
		mn.mapper, mn.scheme = c.mapper, c.scheme
		mn.sentinelFile = c.Config.SentinelFiles[name]
		n = mn
	case Journald:
		jn, err := c.startJournaldNode(name, boot)
		if err != nil {
			return nil, err
		}
		n = jn
	default:
		return nil, fmt.Errorf("unknown journal mode %q (want %s or %s)", c.Config.Journal, Memory, Journald)
	}
	if c.Config.DeferDaemons {
		return n, nil
	}
	return n, n.StartDaemon(c.ctx)
}

// StartDaemons starts every node's daemon, for a cluster started with
// DeferDaemons.
func (c *Cluster) StartDaemons() error {
	var errs []error
	for _, n := range c.nodes {
		if err := n.StartDaemon(c.ctx); err != nil {
			errs = append(errs, fmt.Errorf("start daemon of %s: %w", n.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// daemonConfig is the rest config of a node's in-process daemon: Config's
// DaemonConfig or else the test bed's, behind the node's link (SetLink),
// counting requests when asked to. Node "" is every daemon's shared
// discovery, behind no link.
func (c *Cluster) daemonConfig(node string) *rest.Config {
	base := c.Bed.Config
	if c.Config.DaemonConfig != nil {
		base = c.Config.DaemonConfig
	}
	cfg := rest.CopyConfig(base)
	if node != "" {
		l := newLink()
		c.mu.Lock()
		c.links[node] = l
		c.mu.Unlock()
		cfg.Wrap(l.wrap)
	}
	if counter := c.Config.DaemonRequests; counter != nil {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				counter.Add(1)
				return rt.RoundTrip(r)
			})
		})
	}
	return cfg
}

// SetLink drops, stalls or restores a memory node's network path to the
// API server: its daemon is cut off while the node runs.
func (c *Cluster) SetLink(node string, s LinkState) {
	c.mu.Lock()
	l := c.links[node]
	c.mu.Unlock()
	if l != nil {
		l.set(s)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// NodeName is the name of a pool's i-th node (from 0): what a test that
// configures nodes by name before Start (SentinelFiles) names them by.
func NodeName(pool string, i int) string { return fmt.Sprintf("%s-%03d", pool, i) }

// beforeReboot takes down what goes down with the node: its node_exporter.
func (c *Cluster) beforeReboot(name string) {
	if c.metrics != nil {
		c.metrics.hostDown(name)
	}
}

// afterReboot brings the node's node_exporter back, reporting the
// unfragmented memory of a fresh boot, and puts the node's workload back,
// as the scheduler would.
func (c *Cluster) afterReboot(name string) {
	if c.metrics != nil {
		c.metrics.hostUp(name)
	}
	if err := c.createPods(name); err != nil && c.ctx.Err() == nil {
		c.Config.Log.Error(err, "Recreate pods after reboot", "node", name)
	}
}

// createWorkloadBudgets creates the workload's namespace and budgets. A
// later cluster on the same API server (a later test of the package) shares
// them.
func (c *Cluster) createWorkloadBudgets() error {
	if c.Config.PodsPerNode == 0 {
		return nil
	}
	namespace, apps := c.workload()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Bed.Client.Create(c.ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace: %w", err)
	}
	budget := intstr.FromInt32(1)
	if c.Config.Realistic {
		budget = intstr.FromString("10%")
	}
	for _, app := range apps {
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: app},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MaxUnavailable: ptr.To(budget),
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			},
		}
		if err := c.Bed.Client.Create(c.ctx, pdb); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create budget %s: %w", app, err)
		}
	}
	return nil
}

// workload is the namespace and the apps of the cluster's workload.
func (c *Cluster) workload() (namespace string, apps []string) {
	if !c.Config.Realistic {
		for i := range appsPerNamespace {
			apps = append(apps, fmt.Sprintf("app-%d", i))
		}
		return workloadNamespace, apps
	}
	for i := range realisticApps {
		apps = append(apps, fmt.Sprintf("svc-%02d", i))
	}
	return realisticNamespace, apps
}

// createPods creates the node's workload pods, as the scheduler places a
// node's share of the workload on it when it starts and again once it is
// back from a reboot (its pods were evicted before). In a realistic
// cluster each node runs pods of its own mix of apps.
func (c *Cluster) createPods(node string) error {
	namespace, apps := c.workload()
	first := 0
	if c.Config.Realistic {
		first = int(shape.NodeRand(node).Uint32() % uint32(len(apps)))
	}
	var errs []error
	for i := range c.Config.PodsPerNode {
		app := apps[(first+i)%len(apps)]
		name := fmt.Sprintf("%s-%s-%s", app, node, uuid.NewString()[:8])
		p := gen.Pod(namespace, name, node, map[string]string{"app": app})
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		if c.Config.Realistic {
			shapeWorkloadPod(p, app, c.addresses[node])
		}
		errs = append(errs, gen.CreatePod(c.ctx, c.Bed.Client, p))
	}
	return errors.Join(errs...)
}

func (c *Cluster) startJournaldNode(name, boot string) (Node, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(c.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := c.Bed.WriteKubeconfig(kubeconfig, "node-"+name, "system:masters"); err != nil {
		return nil, err
	}
	jn := &journaldNode{name: name}
	args := []string{self, "run", "--node-name", name, "--kubeconfig", kubeconfig, "--metrics-bind-address=0",
		"--health-probe-bind-address=0", "--reboot-timeout", c.Config.Timing.DaemonRebootTimeout.String()}
	if f := c.Config.SentinelFiles[name]; f != "" {
		args = append(args, "--sentinel-file="+f, "--sentinel-interval=1s")
	}
	n, err := node.Start(c.ctx, node.Config{
		Name: name, Dir: dir, BootID: boot, Log: c.Config.NodeLog,
		Daemon: args,
		Env:    []string{node.DaemonEnv + "=1"},
		OnReboot: func(ctx context.Context, _, next string) error {
			c.beforeReboot(name)
			if !c.isFast(name) {
				if err := gen.SetBoot(ctx, c.Bed.Client, name, next, false); err != nil {
					return err
				}
			}
			// The node's Stop cancels ctx, and waits for this hook.
			select {
			case <-time.After(c.Config.Timing.jittered()):
			case <-ctx.Done():
				return ctx.Err()
			}
			if err := gen.SetBoot(ctx, c.Bed.Client, name, next, true); err != nil {
				return err
			}
			c.afterReboot(name)
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	jn.n, jn.self = n, self
	return jn, nil
}

// Nodes returns the cluster's nodes in pool order.
func (c *Cluster) Nodes() []Node { return slices.Clone(c.nodes) }

// Node returns a node by name, or nil.
func (c *Cluster) Node(name string) Node { return c.byName[name] }

// StartOperator starts the operator, unless it runs.
func (c *Cluster) StartOperator() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.operator != nil {
		return nil
	}
	opts := operatorOptions()
	if p := c.Prometheus(); p != nil {
		opts.PrometheusURL = p.URL()
	}
	opts.Notify = c.Config.Notify
	opts.HooksNamespace = c.Config.HooksNamespace
	op, err := StartOperator(c.ctx, c.Bed.Config, opts)
	if err != nil {
		return err
	}
	c.operator = op
	return nil
}

// StopOperator kills the operator, if it runs, and waits until it is gone.
func (c *Cluster) StopOperator() error {
	c.mu.Lock()
	op := c.operator
	c.operator = nil
	c.mu.Unlock()
	if op == nil {
		return nil
	}
	return op.Stop()
}

// Stop stops the operator and every node.
func (c *Cluster) Stop() {
	_ = c.StopOperator()
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Go(n.Stop)
	}
	wg.Wait()
	if c.metrics != nil {
		c.metrics.stop()
	}
	c.cancel()
	if c.Config.Dir == "" && c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

// Pool returns the spec of a pool by name.
func (c *Cluster) Pool(name string) (PoolSpec, bool) {
	for _, p := range c.Config.Pools {
		if p.Name == name {
			return p, true
		}
	}
	return PoolSpec{}, false
}

// operatorOptions are the operator's options in the simulation: a quick
// drain poll, so simulated drains are not dominated by the poll interval.
func operatorOptions() operator.Options {
	return operator.Options{DrainPollInterval: 200 * time.Millisecond}
}

// SetFast makes a node's reboots fast: it never shows NotReady, as a kexec
// or a quick VM reboot between two kubelet heartbeats would.
func (c *Cluster) SetFast(name string, fast bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fast[name] = fast
}

func (c *Cluster) isFast(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fast[name]
}

// SetRebootDelay keeps a memory node down this much longer than the
// cluster's Timing at its reboots from now on (zero: as the Timing says):
// a node slower than the operator's --node-return-timeout, or one that does
// not come back for a while.
func (c *Cluster) SetRebootDelay(name string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.delays[name] = d
}

func (c *Cluster) rebootDelay(name string) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.delays[name]
}

func (c *Cluster) rebooted(r Reboot) {
	if c.Config.OnReboot != nil {
		c.Config.OnReboot(r)
	}
}
