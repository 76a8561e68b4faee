package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kmaint/kmaint/api/scheme"
	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/daemon/rebooter"
	"github.com/kmaint/kmaint/daemon/sentinel"
	"github.com/kmaint/kmaint/internal/eventrec"
	"github.com/kmaint/kmaint/internal/watcherr"
)

// DefaultBootIDPath is where the kernel publishes the current boot ID.
const DefaultBootIDPath = "/proc/sys/kernel/random/boot_id"

// bootIDPattern is a boot ID as the kernel writes it and FormatBootID
// formats it: a UUID in lower case.
var bootIDPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// Options configure the daemon: what kmaint-daemon's flags set, and the
// seams at which the simulated cluster replaces the host. What only running
// many daemons in one process needs is passed to Run as a Hook.
type Options struct {
	// NodeName is the node the daemon runs on (from the downward API).
	NodeName string
	// BootIDPath is the file holding the node's boot ID, the one journald
	// stamps the node's entries with and the kubelet reports; empty means
	// DefaultBootIDPath. It is read once at start: a boot ID never changes
	// while the process lives, since a reboot ends it. Inside a container
	// the kernel's file is the host kernel's, which is the node's only when
	// the node is a machine or a VM, not when the node is itself a
	// container with a boot ID of its own (a systemd-nspawn machine): there
	// it names a copy of the node's (the chart's daemon.bootIDFile).
	BootIDPath string
	// Journal is where requests are written and read; nil means the
	// system's journal.
	Journal journal.Journal
	// Rebooter reboots the node; nil means logind.
	Rebooter rebooter.Rebooter
	// RebootTimeout is how long the boot ID may stay the same after asking
	// for a reboot before the daemon reports the reboot failed.
	RebootTimeout time.Duration
	// MetricsAddr serves Prometheus metrics; "0" turns them off.
	MetricsAddr string
	// ProbeAddr serves /healthz and /readyz; "0" turns them off.
	ProbeAddr string
	// Clock is the time source; nil means the real clock.
	Clock clock.PassiveClock
	// SentinelFile is the host's reboot sentinel file as the daemon sees it
	// (kured's --reboot-sentinel); its companion SentinelFile+".pkgs" gives
	// the reason. Empty watches no file.
	SentinelFile string
	// SentinelCommand is a command whose exit code 1 says the host needs a
	// reboot and 0 that it does not (kured's --reboot-sentinel-command),
	// run without a shell; empty runs none. At most one of SentinelFile and
	// SentinelCommand.
	SentinelCommand []string
	// SentinelReport is a report of the sentinel file written by another
	// container (kmaint-daemon watch-sentinel), so that the daemon, which
	// runs as root, need not see the host's /run. Empty reads none. At most
	// one of SentinelFile, SentinelCommand and SentinelReport.
	SentinelReport string
	// SentinelInterval is how often the sentinel is looked at; 0 means
	// DefaultSentinelInterval. A command run longer than this is cut off
	// and reported.
	SentinelInterval time.Duration
}

// DefaultSentinelInterval is how often the reboot sentinel is looked at by
// default. A file costs a stat a minute; a reboot waits for the pool's
// turn anyway, so looking more often would win nothing.
const DefaultSentinelInterval = time.Minute

// maxSentinelCommandTime is the longest a sentinel command may run.
const maxSentinelCommandTime = 5 * time.Minute

// The bounds of --sentinel-interval.
const (
	MinSentinelInterval = time.Second
	MaxSentinelInterval = 24 * time.Hour
)

// Validate refuses options that cannot mean anything, naming the flag, so
// that a typo stops the daemon at start rather than marking every reboot
// degraded at once.
func (o Options) Validate() error {
	switch {
	case o.NodeName == "":
		return errors.New("no node name: set NODE_NAME from the downward API (spec.nodeName) or pass --node-name")
	case o.RebootTimeout < 0:
		return fmt.Errorf("--reboot-timeout=%s: must be positive (0 means the default, 10m)", o.RebootTimeout)
	case o.RebootTimeout > 0 && o.RebootTimeout < time.Second:
		return fmt.Errorf("--reboot-timeout=%s: no node reboots that fast; give at least 1s (the default is 10m)", o.RebootTimeout)
	case countSet(o.SentinelFile != "", len(o.SentinelCommand) > 0, o.SentinelReport != "") > 1:
		return fmt.Errorf("--sentinel-file=%q, --sentinel-command=%q and --sentinel-report=%q: give one at most; the daemon watches one sentinel",
			o.SentinelFile, strings.Join(o.SentinelCommand, " "), o.SentinelReport)
	case o.SentinelInterval != 0 && (o.SentinelInterval < MinSentinelInterval || o.SentinelInterval > MaxSentinelInterval):
		return fmt.Errorf("--sentinel-interval=%s: must be between %s and %s (the default is %s)", o.SentinelInterval, MinSentinelInterval, MaxSentinelInterval, DefaultSentinelInterval)
	}
	return nil
}

// countSet counts the true values.
func countSet(set ...bool) int {
	n := 0
	for _, b := range set {
		if b {
			n++
		}
	}
	return n
}

// ReadBootID reads a boot ID file such as /proc/sys/kernel/random/boot_id,
// and refuses one that holds no boot ID: every request the daemon journals
// and every one it reads back is matched by the boot ID, so a wrong one
// must stop it rather than make it ignore the node's requests.
func ReadBootID(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read boot ID: %w", err)
	}
	id := journal.FormatBootID(string(b))
	switch {
	case id == "":
		return "", fmt.Errorf("boot ID file %s is empty", path)
	case !bootIDPattern.MatchString(id):
		return "", fmt.Errorf("boot ID file %s holds %q, not a boot ID (a UUID, as %s holds)", path, truncate(string(b), 64), DefaultBootIDPath)
	}
	return id, nil
}

// truncate shortens s for an error message.
func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// Run runs the daemon for one node until ctx is done. The kmaint-daemon
// binary passes no hooks.
func Run(ctx context.Context, cfg *rest.Config, opts Options, hooks ...Hook) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	var in inProcess
	for _, h := range hooks {
		h(&in)
	}
	if opts.BootIDPath == "" {
		opts.BootIDPath = DefaultBootIDPath
	}
	bootID := in.bootID
	if bootID == "" {
		var err error
		if bootID, err = ReadBootID(opts.BootIDPath); err != nil {
			return err
		}
	}
	if opts.RebootTimeout == 0 {
		opts.RebootTimeout = 10 * time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if in.registerer == nil {
		in.registerer = ctrlmetrics.Registry
	}
	base := ctrl.Log
	if in.logger != nil {
		base = *in.logger
	}
	log := base.WithName("daemon").WithValues("node", opts.NodeName, "bootID", bootID)
	if opts.Journal == nil {
		opts.Journal = &journal.Systemd{OnInvalid: func(f map[string]string, err error) {
			log.Info("Ignoring a journal entry", "reason", err.Error(), "uid", f["_UID"], "pid", f["_PID"], "comm", f["_COMM"])
		}}
	}
	if opts.Rebooter == nil {
		opts.Rebooter = &rebooter.Logind{}
	}
	bootTime := in.bootTime
	if bootTime.IsZero() {
		bt, err := ReadBootTime("/proc/stat")
		if err != nil {
			log.Info("Boot time unknown; reporting the daemon's start", "reason", err.Error())
			bt = opts.Clock.Now()
		}
		bootTime = bt
	}
	m, err := newMetrics(in.registerer, opts.NodeName, bootTime)
	if err != nil {
		return fmt.Errorf("register metrics: %w", err)
	}

	s := in.scheme
	if s == nil {
		if s, err = scheme.New(); err != nil {
			return err
		}
	}
	// Only this node is watched, by name, which the API server indexes: a
	// thousand daemons cost it a thousand small watches, and a write of one
	// Node goes to one of them. NodeMaintenances are read one by name when
	// the node names them (protocol.APIRequests); a watch of them, by any
	// field, would get every write of every NodeMaintenance to every daemon.
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 s,
		Logger:                 log,
		Metrics:                metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress: opts.ProbeAddr,
		MapperProvider:         mapperProvider(in.restMapper),
		Cache: cache.Options{
			ByObject: map[client.Object]cache.ByObject{
				&corev1.Node{}: {Field: fields.OneTermEqualSelector("metadata.name", opts.NodeName)},
			},
			DefaultWatchErrorHandler: watcherr.Handler,
		},
	})
	if err != nil {
		return fmt.Errorf("new manager: %w", err)
	}
	eventsClient, err := eventsv1client.NewForConfigAndClient(cfg, mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("events client: %w", err)
	}
	sender := eventrec.New(eventsClient, s, log.WithName("events"))
	a := &agent{
		client:         mgr.GetClient(),
		reader:         mgr.GetAPIReader(),
		journal:        opts.Journal,
		rebooter:       opts.Rebooter,
		recorder:       sender.Recorder("kmaint-daemon"),
		clock:          opts.Clock,
		metrics:        m,
		nodeName:       opts.NodeName,
		bootID:         bootID,
		rebootTimeout:  opts.RebootTimeout,
		journalChanged: make(chan event.GenericEvent, 1),

		sentinelInterval: cmp.Or(opts.SentinelInterval, DefaultSentinelInterval),
	}
	switch {
	case opts.SentinelFile != "":
		a.sentinel = sentinel.File{Path: opts.SentinelFile}
	case len(opts.SentinelCommand) > 0:
		// A command that hangs must not stop the daemon looking for hours.
		a.sentinel = sentinel.Command{Argv: opts.SentinelCommand, Timeout: min(a.sentinelInterval, maxSentinelCommandTime)}
	case opts.SentinelReport != "":
		// The other container looks as often as the daemon reads: a report
		// two looks and a minute old has been missed.
		a.sentinel = sentinel.Reported{Path: opts.SentinelReport, MaxAge: 2*a.sentinelInterval + time.Minute, Now: opts.Clock.Now,
			Started: opts.Clock.Now()}
	}
	if err := a.setup(mgr, in.duplicateNames); err != nil {
		return err
	}
	if a.sentinel != nil {
		log.Info("Watching the reboot sentinel", "file", opts.SentinelFile, "command", opts.SentinelCommand, "report", opts.SentinelReport, "interval", a.sentinelInterval)
		if err := mgr.Add(manager.RunnableFunc(a.watchSentinel)); err != nil {
			return fmt.Errorf("add sentinel watcher: %w", err)
		}
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return opts.Journal.Follow(ctx, a.onEntry, a.onCaughtUp)
	})); err != nil {
		return fmt.Errorf("add journal follower: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("add healthz: %w", err)
	}
	if err := mgr.AddReadyzCheck("journal", func(*http.Request) error {
		if _, ok := a.snapshot(); !ok {
			return errors.New("journal not read yet")
		}
		return nil
	}); err != nil {
		return fmt.Errorf("add readyz: %w", err)
	}
	log.Info("Starting")
	// The events are written until after the manager stops: the one that
	// says the node is rebooting is recorded just before the reboot stops
	// the daemon.
	sender.Start()
	err = mgr.Start(ctx)
	if serr := sender.Stop(eventGrace); serr != nil {
		log.Error(serr, "Events lost at the stop")
	}
	if err != nil {
		return fmt.Errorf("run daemon: %w", err)
	}
	return nil
}

// eventGrace bounds what the daemon spends at its stop writing the events
// still queued: short, since a node shutting down waits for it.
const eventGrace = 5 * time.Second

// mapperProvider returns the shared mapper, or nil for controller-runtime's
// own.
func mapperProvider(m meta.RESTMapper) func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
	if m == nil {
		return nil
	}
	return func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return m, nil }
}

// setup registers the agent: every event maps to the one key, the node.
func (a *agent) setup(mgr manager.Manager, duplicateNames bool) error {
	toNode := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: a.nodeName}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("daemon").
		WithOptions(controller.Options{SkipNameValidation: ptr.To(duplicateNames)}).
		Watches(&corev1.Node{}, toNode).
		WatchesRawSource(source.Channel(a.journalChanged, toNode)).
		Complete(a)
}
