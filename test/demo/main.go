// Command demo runs kmaint's main job on a cluster it makes up: a real
// kube-apiserver and etcd (envtest), the real operator, and simulated nodes
// running the real daemon. Reboot requests arrive from three sources, a host
// command on some nodes of one pool, a config rollout of another, and a
// metric: node_exporters report memory fragmentation to a real Prometheus,
// it rises on a few nodes, and the sample memory-fragmentation RebootPolicy
// asks for those that stay past its threshold, to be rebooted inside its
// window. With Prometheus, the rolled-out pool also guards its rollout: a
// settle time and a health check; one of its nodes comes back unhealthy,
// the pool halts after it, and once the node's series recovers the demo
// resumes it as a person would (halt.go). The demo shows them pass the
// gate, live, as read from the API server and Prometheus. `make demo` runs it; `make demo DEMO_FLAGS=--help`
// lists its flags.
//
// With --cluster=real (`make demo-cluster`) the cluster is a real one on
// this machine instead (test/realcluster): nodes that are systemd-nspawn
// machines running systemd, containerd and a kubelet, kmaint installed from
// its image and Helm chart, and reboots that really happen; a host request
// and a config rollout, with the same live view, summary and report.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kmaint/kmaint/test/node"
	"github.com/kmaint/kmaint/test/sim"
)

func main() {
	// Simulated journald nodes run their daemon by running this program again.
	node.MaybeRunDaemon()

	opts := options{}
	var journal string
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	var cluster string
	fs.StringVar(&cluster, "cluster", "sim", "sim: simulated nodes on a real API server; real: a real cluster on this machine, systemd-nspawn nodes with systemd, containerd and a kubelet that really reboot, kmaint installed from its image and chart (make demo-cluster; needs root).")
	fs.StringVar(&opts.ClusterName, "cluster-name", "kmaint-demo", "With --cluster=real: the cluster's name; starting it cleans up what an earlier cluster of that name left.")
	fs.IntVar(&opts.Nodes, "nodes", 12, "Nodes in all, split evenly over the pools (with --cluster=real: default 4, at most 8).")
	fs.IntVar(&opts.Pools, "pools", 2, "Pools (web, batch, infra, ...).")
	fs.StringVar(&opts.MaxUnavailable, "max-unavailable", "", `maxUnavailable of every pool, an integer or a percentage such as 50% (default: web 2, batch 50%, others 25%).`)
	fs.DurationVar(&opts.RebootTime, "reboot-time", 3*time.Second, "How long a simulated node is down for a reboot.")
	fs.StringVar(&journal, "journal", string(sim.Memory), "Node journals: memory (in this process), or journald (a real systemd-journald and daemon process per node; needs root).")
	fs.BoolVar(&opts.Metrics, "metrics", true, "Add the metric part: node exporters, a real Prometheus (/usr/bin/prometheus or $KMAINT_PROMETHEUS) and the memory-fragmentation RebootPolicy rebooting fragmented nodes inside its window. Off by itself without Prometheus.")
	fs.BoolVar(&opts.Halt, "halt", true, "With the metric part: the rolled-out pool checks each rebooted node's health on Prometheus for a settle time; one node comes back unhealthy, the pool halts after it, and the demo resumes it once the node's series recovers, as a person would (kubectl kmaint resume).")
	fs.BoolVar(&opts.ExitWhenDone, "exit-when-done", false, "Exit after the summary instead of running on for kubectl until Ctrl-C.")
	fs.StringVar(&opts.KubeconfigOut, "kubeconfig-out", "./demo-kubeconfig", "Where to write a cluster-admin kubeconfig for the demo's API server.")
	fs.StringVar(&opts.ReportOut, "report-out", "./demo-report.html", `Where to write the HTML rollout report at the end; "" writes none.`)
	fs.StringVar(&opts.LogOut, "log-out", "./demo-kmaint.log", "Where the operator's and the daemons' logs go.")
	_ = fs.Parse(os.Args[1:])
	opts.Journal = sim.JournalMode(journal)
	switch cluster {
	case "sim":
	case "real":
		opts.Real = true
		// The real demo's pools and requests are fixed, its reboots are
		// real and so are its journals, and it has no Prometheus.
		for _, simOnly := range []string{"pools", "max-unavailable", "reboot-time", "journal", "metrics", "halt"} {
			if flagSet(fs, simOnly) {
				fmt.Fprintf(os.Stderr, "demo: --%s applies to --cluster=sim only\n", simOnly)
				os.Exit(2)
			}
		}
		if !flagSet(fs, "nodes") {
			opts.Nodes = 4
		}
		// Measured on the real nodes, not simulated.
		opts.RebootTime = 0
	default:
		fmt.Fprintf(os.Stderr, "demo: --cluster=%s: want sim or real\n", cluster)
		os.Exit(2)
	}
	opts.Live = isTerminal(os.Stdout)

	logFile, err := os.Create(opts.LogOut)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile)))
	opts.Logs = logFile

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first Ctrl-C, a second one kills the demo at once.
	go func() {
		<-ctx.Done()
		stop()
	}()
	if opts.Real {
		err = runReal(ctx, opts, os.Stdout)
	} else {
		err = run(ctx, opts, os.Stdout)
	}
	_ = logFile.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// isTerminal reports whether f is a terminal, where the demo redraws its
// view in place; anywhere else it prints one line per change.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// flagSet tells whether the command line set the flag.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
