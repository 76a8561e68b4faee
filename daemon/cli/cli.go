package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/daemon"
	"github.com/kmaint/kmaint/daemon/hostcommand"
	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/daemon/rebooter"
	"github.com/kmaint/kmaint/daemon/sentinel"
	"github.com/kmaint/kmaint/internal/version"
)

// Hooks replace parts of the host for tests and the simulated cluster.
type Hooks struct {
	// Rebooter replaces logind.
	Rebooter rebooter.Rebooter
}

const usage = `kmaint-daemon is kmaint's node agent.

Usage:
  kmaint-daemon run [flags]               run the agent for this node (the DaemonSet's command)
  kmaint-daemon request-reboot <reason>   ask for a reboot of this node
  kmaint-daemon cancel-reboot <id>        withdraw one of this boot's requests
  kmaint-daemon install-host-command <dir>
                                          copy this command to <dir> on the host
  kmaint-daemon watch-sentinel --file <path> --report <path>
                                          look at the host's reboot sentinel file for run --sentinel-report
  kmaint-daemon version                   print the version (also --version)

request-reboot writes one entry to this node's systemd journal and nothing
else: it needs root and the journal, not the API server. kmaint-daemon run
reads the entry back and raises it on the Node; the operator admits the node
when its pool has room, inside its maintenance windows, cordons and drains it,
and approves the reboot; the daemon then reboots the node. The request belongs
to the current boot: any reboot satisfies it, and it is never replayed after.
Follow it with: kubectl kmaint history <node>

cancel-reboot journals the cancellation of one of this boot's requests (the id
request-reboot printed; without one it lists them). The daemon withdraws the
request until the node's reboot is approved for it, even while the node drains:
kmaint then uncordons what it cordoned. After the approval the cancellation is
refused (event CancelRefused on the Node) and the node reboots.

install-host-command copies this binary to <dir>/kmaint-daemon, so that root
on the node can run request-reboot and cancel-reboot there (the chart's
daemon.hostCommandDir runs it in the daemon's init container). Without it, run
them in the node's daemon pod: kubectl exec -n kmaint-system <pod> --
/kmaint-daemon request-reboot <reason>.
`

// Main runs kmaint-daemon with args (without the program name) and returns
// the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, hooks Hooks) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	switch args[0] {
	case "run":
		return run(ctx, args[1:], stderr, hooks)
	case "request-reboot":
		return requestReboot(args[1:], stdout, stderr)
	case "cancel-reboot":
		return cancelReboot(ctx, args[1:], stdout, stderr)
	case "install-host-command":
		return installHostCommand(args[1:], stdout, stderr)
	case "watch-sentinel":
		return watchSentinel(ctx, args[1:], stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, version.Get())
		return 0
	default:
		fmt.Fprintf(stderr, "kmaint-daemon: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

func requestReboot(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("request-reboot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: kmaint-daemon request-reboot <reason>\n\nThe reason is required, at most %d bytes, and is written to the journal.\n\n%s", v1alpha1.MaxReasonLength, usage)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	reason := strings.Join(fs.Args(), " ")
	id, err := daemon.RequestReboot(&journal.Systemd{}, reason, os.Geteuid(), time.Now())
	if err != nil {
		fmt.Fprintln(stderr, "kmaint-daemon request-reboot:", err)
		return 1
	}
	fmt.Fprintf(stdout, "Reboot requested (request %s). kmaint reboots this node when its pool has room.\n", id)
	return 0
}

func cancelReboot(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cancel-reboot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bootIDFile := fs.String("boot-id-file", daemon.DefaultBootIDPath,
		"The node's boot ID file: the default is right on the node itself; in a pod on a node that is a container, the file run --boot-id-file names.")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: kmaint-daemon cancel-reboot <request id>\n\n%s", usage)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "kmaint-daemon cancel-reboot: one request id, not %d words\n", fs.NArg())
		return 2
	}
	bootID, err := daemon.ReadBootID(*bootIDFile)
	if err != nil {
		fmt.Fprintln(stderr, "kmaint-daemon cancel-reboot:", err)
		return 1
	}
	out, err := daemon.CancelReboot(ctx, &journal.Systemd{}, fs.Arg(0), bootID, os.Geteuid(), time.Now())
	if err != nil {
		fmt.Fprintln(stderr, "kmaint-daemon cancel-reboot:", err)
		return 1
	}
	r := out.Request
	if out.Already {
		fmt.Fprintf(stdout, "Request %s (%s: %s) is already cancelled.\n", r.ID, r.Source, v1alpha1.FitReason(r.Reason))
		return 0
	}
	fmt.Fprintf(stdout, "Cancellation of request %s (%s: %s) journaled. The daemon withdraws it unless the node's reboot is already approved for it: "+
		"then the node reboots and the Node gets a CancelRefused event.\n", r.ID, r.Source, v1alpha1.FitReason(r.Reason))
	return 0
}

// watchSentinel looks at the sentinel file and reports each look for the
// daemon (run --sentinel-report), from a container of its own: it needs the
// host's /run, and runs as nobody so that the sockets there stay out of
// reach.
func watchSentinel(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("watch-sentinel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("file", "", "The host's reboot sentinel file, as this container sees it (required).")
	report := fs.String("report", "", "Where to write each look, for run --sentinel-report (required).")
	interval := fs.Duration("interval", daemon.DefaultSentinelInterval, "How often to look; give run --sentinel-interval the same.")
	probeAddr := fs.String("health-probe-bind-address", "0", `Address of /healthz and /readyz: ready once a report is written, healthy while one was written within two intervals and a minute; "0" turns them off.`)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	switch {
	case *file == "" || *report == "" || fs.NArg() > 0:
		fmt.Fprintln(stderr, "Usage: kmaint-daemon watch-sentinel --file <path> --report <path> [--interval 1m]")
		return 2
	case *interval < daemon.MinSentinelInterval || *interval > daemon.MaxSentinelInterval:
		fmt.Fprintf(stderr, "kmaint-daemon watch-sentinel: --interval=%s: must be between %s and %s\n", *interval, daemon.MinSentinelInterval, daemon.MaxSentinelInterval)
		return 2
	}
	if *probeAddr != "0" {
		srv := &http.Server{Addr: *probeAddr, Handler: sentinelProbes(*report, 2**interval+time.Minute), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintln(stderr, "kmaint-daemon watch-sentinel: probes:", err)
			}
		}()
		defer srv.Close()
	}
	if err := sentinel.Watch(ctx, sentinel.File{Path: *file}, *report, *interval, time.Now); err != nil {
		fmt.Fprintln(stderr, "kmaint-daemon watch-sentinel:", err)
		return 1
	}
	return 0
}

// sentinelProbes serves watch-sentinel's probes from its report file: ready
// once written, healthy while written within maxAge.
func sentinelProbes(report string, maxAge time.Duration) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if _, err := os.Stat(report); err != nil {
			http.Error(w, "no report written yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fi, err := os.Stat(report)
		switch {
		case errors.Is(err, os.ErrNotExist):
			// Not written yet: the first look may still be under way.
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		case time.Since(fi.ModTime()) > maxAge:
			http.Error(w, fmt.Sprintf("last report written %s ago", time.Since(fi.ModTime()).Round(time.Second)), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

func installHostCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("install-host-command", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: kmaint-daemon install-host-command <dir>\n\n%s", usage)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "kmaint-daemon install-host-command: find this command:", err)
		return 1
	}
	dir := fs.Arg(0)
	changed, err := hostcommand.Install(self, dir)
	if err != nil {
		fmt.Fprintln(stderr, "kmaint-daemon install-host-command:", err)
		return 1
	}
	target := filepath.Join(dir, hostcommand.Name)
	if changed {
		fmt.Fprintf(stdout, "Installed %s (%s).\n", target, version.Get())
	} else {
		fmt.Fprintf(stdout, "%s is already this command (%s).\n", target, version.Get())
	}
	return 0
}

func run(ctx context.Context, args []string, stderr io.Writer, hooks Hooks) int {
	opts := daemon.Options{Rebooter: hooks.Rebooter}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opts.NodeName, "node-name", os.Getenv("NODE_NAME"), "This node's name (default $NODE_NAME, set from the downward API).")
	fs.StringVar(&opts.BootIDPath, "boot-id-file", daemon.DefaultBootIDPath,
		"The node's boot ID file. The default, the kernel's, is the node's on machines and VMs; on nodes that are themselves containers "+
			"with a boot ID of their own (systemd-nspawn machines) a container sees the host kernel's there, so give a copy of the node's "+
			"(the chart's daemon.bootIDFile).")
	fs.DurationVar(&opts.RebootTimeout, "reboot-timeout", 10*time.Minute, "How long the boot ID may stay unchanged after a reboot was asked for before the node is reported degraded.")
	fs.StringVar(&opts.MetricsAddr, "metrics-bind-address", ":8090", `Address of the Prometheus metrics endpoint; "0" turns it off.`)
	fs.StringVar(&opts.ProbeAddr, "health-probe-bind-address", ":8091", `Address of /healthz and /readyz; "0" turns them off.`)
	fs.StringVar(&opts.SentinelFile, "sentinel-file", "",
		"The host's reboot sentinel file as the daemon sees it (kured's --reboot-sentinel; the chart mounts the host's /var/run/reboot-required): "+
			"while it is present the host needs a reboot, and its .pkgs companion names the packages. Empty watches no file.")
	sentinelCommand := fs.String("sentinel-command", "",
		"A command that says whether the host needs a reboot (kured's --reboot-sentinel-command), e.g. needs-restarting -r: exit code 1 means it does, "+
			"0 that it does not, anything else is reported and reboots nothing. Split on spaces and run without a shell, as the daemon's user; the chart "+
			"runs it in the host's namespaces through nsenter. Not with --sentinel-file.")
	fs.StringVar(&opts.SentinelReport, "sentinel-report", "",
		"A report of the sentinel file that kmaint-daemon watch-sentinel writes from another container (the DaemonSet's), so that the daemon, "+
			"which runs as root, need not mount the host's /run with its sockets. A missing or stale report is reported and reboots nothing.")
	fs.DurationVar(&opts.SentinelInterval, "sentinel-interval", daemon.DefaultSentinelInterval,
		"How often the sentinel is looked at; a command running longer is cut off and reported.")
	kubeconfig := fs.String("kubeconfig", "", "Path to a kubeconfig; default the pod's service account.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	opts.SentinelCommand = strings.Fields(*sentinelCommand)
	// Nonsensical flags are refused before anything else, with the flag's
	// name, rather than after a connection to the API server.
	if err := opts.Validate(); err != nil {
		fmt.Fprintln(stderr, "kmaint-daemon run:", err)
		return 2
	}
	if _, err := daemon.ReadBootID(opts.BootIDPath); err != nil {
		fmt.Fprintf(stderr, "kmaint-daemon run: --boot-id-file=%s: %v\n", opts.BootIDPath, err)
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	v := version.Get()
	ctrl.Log.WithName("setup").Info("Starting kmaint-daemon", "version", v.Version, "commit", v.Commit, "go", v.GoVersion)
	if *kubeconfig != "" {
		os.Setenv("KUBECONFIG", *kubeconfig)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintln(stderr, "kmaint-daemon run: no cluster to talk to:", err)
		return 1
	}
	if err := daemon.Run(ctx, cfg, opts); err != nil {
		fmt.Fprintln(stderr, "kmaint-daemon run:", err)
		return 1
	}
	return 0
}
