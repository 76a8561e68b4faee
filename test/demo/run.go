package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/cmd/kubectl-kmaint/report"
	"github.com/kmaint/kmaint/test/promtest"
	"github.com/kmaint/kmaint/test/sim"
	"github.com/kmaint/kmaint/test/testbed"
)

// options configure the demo.
type options struct {
	// Nodes is the number of simulated nodes, split evenly over Pools.
	Nodes int
	// Pools is the number of MaintenancePools.
	Pools int
	// MaxUnavailable, when set, is every pool's maxUnavailable.
	MaxUnavailable string
	// RebootTime is how long a node is down for a reboot.
	RebootTime time.Duration
	// Journal is how simulated nodes journal.
	Journal sim.JournalMode
	// ExitWhenDone ends the demo after the summary.
	ExitWhenDone bool
	// KubeconfigOut is where the cluster-admin kubeconfig is written.
	KubeconfigOut string
	// ReportOut is where the HTML rollout report is written at the end;
	// empty writes none.
	ReportOut string
	// LogOut is where main sends the logs; run only names it.
	LogOut string
	// Live redraws the view in place with ANSI escapes (stdout is a
	// terminal); otherwise each change is one line.
	Live bool
	// Metrics adds the metric part: node exporters, a real Prometheus and
	// the memory-fragmentation RebootPolicy. Without a prometheus binary
	// the demo says so and goes on without it.
	Metrics bool
	// Halt, with the metric part, guards the rolled-out pool with a settle
	// time and a health check, and makes one of its nodes come back
	// unhealthy: the pool halts, and the demo resumes it (halt.go).
	Halt bool
	// Bed, when set, is a running API server to use instead of starting one;
	// the demo leaves it running. Tests share theirs this way.
	Bed *testbed.Bed
	// Real runs the demo on a real cluster (runReal) instead of a
	// simulated one.
	Real bool
	// ClusterName names the real cluster (realcluster.Config.Name).
	ClusterName string
	// Logs receives the real cluster's progress; nil discards it.
	Logs io.Writer
}

func (o options) logs() io.Writer {
	if o.Logs == nil {
		return io.Discard
	}
	return o.Logs
}

// newConfig is the config identity the rollout moves a pool to.
const newConfig = "os-2.0"

// run runs the demo until every request is done and then, unless
// ExitWhenDone, until ctx ends. An ended ctx (Ctrl-C) is a clean stop, not
// an error.
func run(ctx context.Context, opts options, out io.Writer) error {
	pools, err := planPools(opts)
	if err != nil {
		return err
	}
	if opts.Journal != sim.Memory && opts.Journal != sim.Journald {
		return fmt.Errorf("--journal=%s: want %s or %s", opts.Journal, sim.Memory, sim.Journald)
	}
	if opts.Journal == sim.Journald && os.Geteuid() != 0 {
		return errors.New("--journal=journald runs a systemd-journald per node in its own mount namespace and needs root; use --journal=memory")
	}
	fmt.Fprintf(out, "kmaint demo: %d simulated nodes in %d pools, %s reboots, %s journals\n", opts.Nodes, len(pools), opts.RebootTime, opts.Journal)
	defer fmt.Fprintln(out, "Stopped.")
	var metrics *sim.MetricsConfig
	if opts.Metrics {
		if _, err := promtest.LookBinary(); err != nil {
			fmt.Fprintf(out, "No metric part: %v.\n", err)
		} else {
			metrics = &sim.MetricsConfig{Interval: time.Second}
		}
	}

	var halt *haltPlan
	if metrics != nil && opts.Halt {
		halt = planHalt(pools)
	}

	bed := opts.Bed
	if bed == nil {
		fmt.Fprintln(out, "Starting kube-apiserver and etcd (envtest) ...")
		if bed, err = testbed.Start(); err != nil {
			return ignoreEnded(ctx, err)
		}
		defer func() {
			if err := bed.Stop(); err != nil {
				fmt.Fprintln(out, "Stopping the API server:", err)
			}
		}()
	}
	// A cluster-admin kubeconfig for a person's kubectl.
	if err := bed.WriteKubeconfig(opts.KubeconfigOut, "demo-admin", "system:masters"); err != nil {
		return err
	}
	// The kubeconfig is no use once its API server is gone.
	defer os.Remove(opts.KubeconfigOut)
	printKubectlHowTo(out, opts)

	// The host's package tools ask for a reboot of one node through its
	// reboot sentinel, when the first pool has a host node to spare.
	sentinelNode, sentinelFiles := sentinelNodeOf(pools), map[string]string{}
	if sentinelNode != "" {
		dir, err := os.MkdirTemp("", "kmaint-demo-sentinel-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		sentinelFiles[sentinelNode] = filepath.Join(dir, "reboot-required")
	}
	what := ""
	if metrics != nil {
		what = ", node_exporters and Prometheus with config/prometheus/fragmentation-rules.yaml"
	}
	fmt.Fprintf(out, "Starting the operator and %d nodes (2 pods each, PodDisruptionBudgets%s) ...\n", opts.Nodes, what)
	c, err := sim.Start(ctx, bed, sim.Config{
		Pools:       pools,
		Journal:     opts.Journal,
		Timing:      sim.Timing{Reboot: opts.RebootTime},
		PodsPerNode: 2,
		Log:         ctrl.Log.WithName("sim"),
		Metrics:     metrics,

		SentinelFiles: sentinelFiles,
		// The config rollout's hooks stage the new config on each drained
		// node and check it after the reboot (configHooks).
		HooksNamespace: "kmaint-hooks",
	})
	if err != nil {
		return ignoreEnded(ctx, fmt.Errorf("start the simulated cluster: %w", err))
	}
	defer c.Stop()
	if sentinelNode != "" && c.Node(sentinelNode) == nil {
		return fmt.Errorf("the sentinel's node %s is not among the simulated nodes", sentinelNode)
	}
	if err := c.StartOperator(); err != nil {
		return ignoreEnded(ctx, fmt.Errorf("start the operator: %w", err))
	}
	w, err := startWatcher(ctx, bed)
	if err != nil {
		return ignoreEnded(ctx, err)
	}
	defer w.stop()
	// Runs first on the way out, before the deferred stops above.
	defer func() {
		what := "the operator, the nodes and the API server"
		if opts.Bed != nil {
			what = "the operator and the nodes"
		}
		fmt.Fprintf(out, "\nStopping %s ...\n", what)
	}()

	start := time.Now()
	var plan *metricPlan
	if metrics != nil {
		if plan, err = planMetric(c, untouchedNodes(c, hostNodes(c, pools), configPool(pools).Name), start); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "Requests:")
	if _, err := holdOne(ctx, w, bed.Client, configPool(pools), out); err != nil {
		return ignoreEnded(ctx, err)
	}
	if halt != nil {
		// Before the rollout starts: the node must come back unhealthy
		// from its first reboot.
		if err := halt.arm(c); err != nil {
			return err
		}
		go halt.drive(ctx, w, bed.Client, c)
	}
	expected, err := request(ctx, bed.Client, c, pools, sentinelFiles, out)
	if err != nil {
		return ignoreEnded(ctx, err)
	}
	if halt != nil {
		halt.describe(out)
	}
	target := goal{rollout: expected, sentinel: sentinelNode, nodes: append(hostNodes(c, pools), poolNodes(c, configPool(pools).Name)...)}
	switch {
	case plan != nil:
		if err := plan.start(ctx, bed.Client, c, out); err != nil {
			return ignoreEnded(ctx, err)
		}
		target.metric = plan.over()
		target.nodes = append(target.nodes, target.metric...)
		go w.watchFragmentation(ctx, c.Prometheus().Querier(), plan.instances, time.Second)
	case metrics != nil:
		fmt.Fprintln(out, "  metric  none: every node is rebooted by the requests above")
	}
	return finish(ctx, opts, out, w, bed.Client, target, start, plan)
}

// finish shows the requests pass the gate, live, until target is reached;
// then the summary and the rollout report; then, unless ExitWhenDone, every
// change until ctx ends.
func finish(ctx context.Context, opts options, out io.Writer, w *watcher, kube client.Reader, target goal, start time.Time, plan *metricPlan) error {
	fmt.Fprintln(out)
	d := newDisplay(out, opts.Live, start)
	final, state, end, err := d.untilDone(ctx, w, target)
	if err != nil || end.IsZero() {
		return ignoreEnded(ctx, err)
	}
	// The policy's reboots wait for its window: the makespan and the pools'
	// ideal are the host and config requests'.
	makespan := end.Sub(start)
	if plan != nil {
		makespan = d.rolloutEnd.Sub(start)
	}
	rebootTime, measured := opts.RebootTime, false
	if rebootTime == 0 {
		rebootTime, measured = medianDrainAndReboot(state.maintenances), true
	}
	printSummary(out, summarize(final, state.maintenances, makespan, rebootTime, d.haltedFor(end)), measured)
	if plan != nil {
		printMetricSummary(out, final, state, plan)
	}
	if opts.ReportOut != "" {
		if err := writeReport(ctx, kube, opts.ReportOut); err != nil {
			fmt.Fprintln(out, "No rollout report:", err)
		} else {
			path, _ := filepath.Abs(opts.ReportOut)
			fmt.Fprintf(out, "\nRollout report (timeline per node, unavailable against budget): file://%s\n", path)
		}
	}
	if opts.ExitWhenDone {
		return nil
	}
	fmt.Fprintf(out, "\nkmaint keeps running: try kubectl with %s (above). Changes from here on print one line each. Ctrl-C stops everything.\n", opts.KubeconfigOut)
	return ignoreEnded(ctx, d.follow(ctx, w))
}

// writeReport writes the HTML rollout report of everything the cluster's
// NodeMaintenances record.
func writeReport(ctx context.Context, c client.Reader, path string) error {
	items, pools, nodes, err := report.Collect(ctx, c)
	if err != nil {
		return err
	}
	r, err := report.Build(items, pools, nodes, time.Now())
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := r.WriteHTML(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// ignoreEnded turns an error into nil once ctx has ended: the error is then
// most likely the stop itself.
func ignoreEnded(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// defaultMaxUnavailable are the pools' budgets when --max-unavailable is unset.
var defaultMaxUnavailable = []intstr.IntOrString{intstr.FromInt32(2), intstr.FromString("50%")}

var poolNames = []string{"web", "batch", "infra", "data", "edge", "gpu"}

var percent = regexp.MustCompile(`^(100|[1-9]?[0-9])%$`)

// planPools splits the nodes evenly over the pools.
func planPools(opts options) ([]sim.PoolSpec, error) {
	if opts.Pools < 1 || opts.Nodes < opts.Pools {
		return nil, fmt.Errorf("--nodes=%d --pools=%d: want at least one pool and at least one node per pool", opts.Nodes, opts.Pools)
	}
	if opts.RebootTime <= 0 {
		return nil, fmt.Errorf("--reboot-time=%s: want a positive duration", opts.RebootTime)
	}
	var all *intstr.IntOrString
	if opts.MaxUnavailable != "" {
		mu := intstr.Parse(opts.MaxUnavailable)
		if (mu.Type == intstr.Int && mu.IntVal < 1) || (mu.Type == intstr.String && (!percent.MatchString(mu.StrVal) || mu.StrVal == "0%")) {
			return nil, fmt.Errorf("--max-unavailable=%s: want an integer of at least 1 or a percentage from 1%% to 100%%", opts.MaxUnavailable)
		}
		all = &mu
	}
	pools := make([]sim.PoolSpec, opts.Pools)
	for i := range pools {
		p := &pools[i]
		p.Name = fmt.Sprintf("pool-%d", i+1)
		if i < len(poolNames) {
			p.Name = poolNames[i]
		}
		p.Nodes = opts.Nodes / opts.Pools
		if i < opts.Nodes%opts.Pools {
			p.Nodes++
		}
		switch {
		case all != nil:
			p.MaxUnavailable = *all
		case i < len(defaultMaxUnavailable):
			p.MaxUnavailable = defaultMaxUnavailable[i]
		default:
			p.MaxUnavailable = intstr.FromString("25%")
		}
	}
	cp := &pools[min(1, len(pools)-1)]
	cp.Hooks = configHooks()
	return pools, nil
}

// configHooks are the config pool's hooks: a Job that stages the new config
// on the drained node before its reboot, as an upgrade Job installs a
// package, and one that checks the node runs it after, before the node is
// released. The simulated cluster runs them (sim.StageProgram,
// sim.CheckProgram).
func configHooks() *v1alpha1.Hooks {
	job := func(name, program string) v1alpha1.Hook {
		return v1alpha1.Hook{Name: name, Job: &v1alpha1.HookJob{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: name, Image: "kmaint-demo/hook", Command: []string{program}}},
		}}}}
	}
	return &v1alpha1.Hooks{
		BeforeReboot: []v1alpha1.Hook{job("stage-config", sim.StageProgram)},
		AfterReboot:  []v1alpha1.Hook{job("check-config", sim.CheckProgram)},
	}
}

// request makes reboot requests arrive from two sources: `kmaint-daemon
// request-reboot` on half the nodes of the first pool, and a config rollout
// of the second (of the first, when there is one pool). It returns the
// number of requests made.
func request(ctx context.Context, kube client.Client, c *sim.Cluster, pools []sim.PoolSpec, sentinelFiles map[string]string, out io.Writer) (int, error) {
	configPool := configPool(pools)
	hosts := hostNodes(c, pools)
	const reason = "kernel update"
	var asked []string
	for _, n := range hosts {
		if sentinelFiles[n] != "" {
			continue
		}
		if err := c.Node(n).RequestReboot(reason); err != nil {
			return 0, err
		}
		asked = append(asked, n)
	}
	fmt.Fprintf(out, "  host      kmaint-daemon request-reboot %q on %s\n", reason, strings.Join(asked, ", "))
	for n, path := range sentinelFiles {
		if err := writeSentinel(path); err != nil {
			return 0, err
		}
		fmt.Fprintf(out, "  sentinel  /var/run/reboot-required and its .pkgs (%s) appear on %s, as apt writes them; they stay after the reboot,\n"+
			"            so kmaint reboots it once and then holds it as a reboot loop until they change\n", strings.Join(sentinelPackages, ", "), n)
	}

	if err := rollOut(ctx, kube, configPool.Name); err != nil {
		return 0, err
	}
	fmt.Fprintf(out, "  config    MaintenancePool %s: spec.desiredConfig=%s, a rolling reboot of its %d nodes\n", configPool.Name, newConfig, configPool.Nodes)
	return len(hosts) + configPool.Nodes, nil
}

// sentinelPackages are the packages the demo's sentinel names.
var sentinelPackages = []string{"linux-image-6.1.0-18-amd64", "libc6"}

// writeSentinel writes a reboot sentinel as Debian's package tools do.
func writeSentinel(path string) error {
	if err := os.WriteFile(path+".pkgs", []byte(strings.Join(sentinelPackages, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("write the reboot sentinel: %w", err)
	}
	if err := os.WriteFile(path, []byte("*** System restart required ***\n"), 0o644); err != nil {
		return fmt.Errorf("write the reboot sentinel: %w", err)
	}
	return nil
}

// sentinelNodeOf is the node whose reboot sentinel asks for its reboot: the
// last of the host nodes when there are two or more (the first pool's
// nodes are named in order, as the cluster starts them); none otherwise.
func sentinelNodeOf(pools []sim.PoolSpec) string {
	hosts := (pools[0].Nodes + 1) / 2
	if hosts < 2 {
		return ""
	}
	return fmt.Sprintf("%s-%03d", pools[0].Name, hosts-1)
}

// hostNodes are the nodes the host requests go to: half the first pool's.
func hostNodes(c *sim.Cluster, pools []sim.PoolSpec) []string {
	var names []string
	// The cluster lists its nodes in pool order.
	for _, n := range c.Nodes()[:(pools[0].Nodes+1)/2] {
		names = append(names, n.Name())
	}
	return names
}

// poolNodes are the nodes of a pool, which the simulated cluster names
// after it.
func poolNodes(c *sim.Cluster, pool string) []string {
	var names []string
	for _, n := range c.Nodes() {
		if strings.HasPrefix(n.Name(), pool+"-") {
			names = append(names, n.Name())
		}
	}
	return names
}

// configPool is the pool the rollout goes to: the second (the first, when
// there is one).
func configPool(pools []sim.PoolSpec) sim.PoolSpec {
	return pools[min(1, len(pools)-1)]
}

// printKubectlHowTo says how to look at the demo's cluster from another
// terminal, with the kubectl that came with the API server if there is one.
func printKubectlHowTo(out io.Writer, opts options) {
	kubectl := "kubectl"
	if k := envtestKubectl(); k != "" {
		kubectl = k
	}
	fmt.Fprintf(out, "API server up. A cluster-admin kubeconfig is in %s; from another terminal:\n", opts.KubeconfigOut)
	fmt.Fprintf(out, "  %s --kubeconfig %s get maintenancepools,nodemaintenances\n", kubectl, opts.KubeconfigOut)
	if kubectl != "kubectl" {
		fmt.Fprintln(out, "  (that kubectl came with the API server; any kubectl will do)")
	}
	if opts.LogOut != "" {
		fmt.Fprintf(out, "Logs of the operator and the daemons: %s\n", opts.LogOut)
	}
}

// envtestKubectl finds the kubectl beside kube-apiserver, where
// hack/envtest-assets.sh puts one, relative to the working directory when it
// is below it.
func envtestKubectl() string {
	k, err := testbed.Kubectl()
	if err != nil {
		return ""
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, k); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return k
}
