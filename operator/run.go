package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kmaint/kmaint/api/scheme"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/eventrec"
	"github.com/kmaint/kmaint/internal/watcherr"
	"github.com/kmaint/kmaint/operator/aftercare"
	"github.com/kmaint/kmaint/operator/alertwebhook"
	"github.com/kmaint/kmaint/operator/drain"
	"github.com/kmaint/kmaint/operator/gate"
	"github.com/kmaint/kmaint/operator/history"
	"github.com/kmaint/kmaint/operator/hooks"
	"github.com/kmaint/kmaint/operator/index"
	"github.com/kmaint/kmaint/operator/maintenance"
	"github.com/kmaint/kmaint/operator/metrics"
	"github.com/kmaint/kmaint/operator/notify"
	"github.com/kmaint/kmaint/operator/objectcheck"
	"github.com/kmaint/kmaint/operator/policy"
	"github.com/kmaint/kmaint/operator/poolnodes"
	"github.com/kmaint/kmaint/operator/retention"
	"github.com/kmaint/kmaint/operator/silences"
	"github.com/kmaint/kmaint/operator/unreadable"
	"github.com/kmaint/kmaint/policies/promapi"
)

// Options configure the operator.
type Options struct {
	// MetricsAddr is where Prometheus metrics are served; "0" turns them off.
	MetricsAddr string
	// MetricsSecure serves the metrics over HTTPS to callers the API server
	// authenticates (TokenReview) and authorizes for a GET of /metrics
	// (SubjectAccessReview), as controller-runtime offers; the manifests
	// turn it on. Off, anyone who reaches the port reads them.
	MetricsSecure bool
	// ProbeAddr is where /healthz and /readyz are served; "0" turns them off.
	ProbeAddr string
	// PprofAddr is where Go's profiles (/debug/pprof/) are served, to find
	// where a large cluster's time and memory go; "" or "0" turns them off.
	PprofAddr string
	// LeaderElection makes replicas elect one writer.
	LeaderElection bool
	// LeaderElectionNamespace holds the election's Lease.
	LeaderElectionNamespace string
	// DrainPollInterval is how often a drain in progress is stepped.
	DrainPollInterval time.Duration
	// DaemonConfirmTimeout is how long a node may be back from its approved
	// reboot (Ready, new boot ID) without its daemon confirming it before
	// aftercare completes the reboot without it and reports the daemon
	// missing; 0 means 10m.
	DaemonConfirmTimeout time.Duration
	// NodeReturnTimeout is how long a node approved to reboot may take to
	// come back (a new boot ID, Ready) before aftercare reports it not back
	// (NodeNotBack); the node keeps its slot either way; 0 means 15m.
	NodeReturnTimeout time.Duration
	// Clock is the time source; nil means the real clock.
	Clock clock.PassiveClock
	// PrometheusURL is the Prometheus server that policies and blocking
	// queries ask, e.g. http://prometheus.monitoring:9090. Empty leaves
	// them reporting that no Prometheus is configured.
	PrometheusURL string
	// PrometheusTimeout bounds each query; 0 means 10s.
	PrometheusTimeout time.Duration
	// BlockingQueryInterval is how often a pool's blocking queries are
	// asked while they decide something; 0 means 30s.
	BlockingQueryInterval time.Duration
	// BlockingPodInterval is how long a node whose pods hold its admission
	// waits before its pods are listed again; 0 means 30s.
	BlockingPodInterval time.Duration
	// AlertWebhookAddr is where the Alertmanager webhook receiver listens,
	// e.g. ":9443"; empty or "0" turns it off.
	AlertWebhookAddr string
	// AlertWebhookTokenSecret names the Secret ("namespace/name") whose
	// AlertWebhookTokenKey holds the bearer token Alertmanager must send.
	AlertWebhookTokenSecret string
	// AlertWebhookTokenKey is the Secret's key; empty means "token".
	AlertWebhookTokenKey string
	// AlertWebhookCertFile and AlertWebhookKeyFile serve the receiver with
	// a mounted certificate (e.g. the Secret cert-manager writes), reloaded
	// when it changes.
	AlertWebhookCertFile, AlertWebhookKeyFile string
	// AlertWebhookCertSecret names the Secret ("namespace/name") that holds
	// the certificate the operator generates and renews, when no files are
	// given; empty means DefaultAlertCertSecret in the token Secret's
	// namespace.
	AlertWebhookCertSecret string
	// AlertWebhookCertHosts are the names the generated certificate is for;
	// empty means those of the kmaint-operator Service in the certificate
	// Secret's namespace.
	AlertWebhookCertHosts []string
	// AlertWebhookInsecureHTTP serves plain HTTP, the bearer token in the
	// clear: only where a mesh or a private network protects the traffic.
	AlertWebhookInsecureHTTP bool
	// AlertWebhookFiringTTL is how long a firing alert counts after it was
	// last received; 0 means alertwebhook.DefaultFiringTTL.
	AlertWebhookFiringTTL time.Duration
	// AllowDuplicateControllerNames lets several operators run in one
	// process, as the simulated cluster does when it restarts the operator.
	AllowDuplicateControllerNames bool
	// HistoryPerNode is how many finished NodeMaintenances each node
	// keeps, and HistoryMaxAge how long one is kept (see
	// retention.Retention); 0 sets no limit. Both 0 prune nothing.
	HistoryPerNode int
	HistoryMaxAge  time.Duration
	// Notify sends chat messages about kmaint's events; off unless
	// Notify.URLsFile is set.
	Notify notify.Options
	// HooksNamespace is where the pools' Job hooks run; empty runs none.
	HooksNamespace string
	// HooksServiceAccount is the service account, in HooksNamespace, that
	// every hook's pod runs under, whatever its pool's template says;
	// empty means the namespace's default one.
	HooksServiceAccount string
	// HooksPriorityClass is the PriorityClass of every hook's pod; empty
	// leaves the template's.
	HooksPriorityClass string
	// Silences say which Alertmanagers hold the pools' silences; none
	// configured, a pool that asks for silences holds (or proceeds, as
	// its onUnreachable says).
	Silences silences.Options
}

// Leader election and events need these besides what the controllers' own
// markers ask for.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=kmaint-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// hooksNamespaceOrNone is the namespace whose Jobs the cache holds: the
// hooks', or, when there is none, a name no namespace can have, so that
// nothing ever lists Jobs cluster-wide.
func hooksNamespaceOrNone(ns string) string {
	if ns == "" {
		return "kmaint-no-hooks-namespace-"
	}
	return ns
}

// NewManager builds a manager with kmaint's controllers.
func NewManager(ctx context.Context, cfg *rest.Config, opts Options) (manager.Manager, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s, err := scheme.New()
	if err != nil {
		return nil, err
	}
	if err := checkHooksNamespace(ctx, cfg, s, opts.HooksNamespace); err != nil {
		return nil, err
	}
	slim := newSlimmer()
	// The history needs an HTTP client before the manager, which needs the
	// history's ListerWatcher first. Its connections are the manager's all
	// the same: client-go keeps one transport per TLS configuration, which
	// the manager's own clients (it makes several) share too.
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("http client: %w", err)
	}
	finished, err := history.New(cfg, httpClient, s, slim.shared.str)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: s,
		// Nodes carry managedFields from every writer (kubelet, daemon, gate);
		// the operator reads none of them, and at thousands of nodes they
		// would be most of its memory.
		Cache: cache.Options{
			DefaultTransform: cache.TransformStripManagedFields(),
			ByObject: map[client.Object]cache.ByObject{
				&corev1.Node{}: {Transform: slim.node},
				// The finished records, a year of history, are kept apart
				// in a smaller form (package history).
				&v1alpha1.NodeMaintenance{}: {Transform: slim.maintenance, Field: history.Open()},
				// Only the hooks' Jobs, and the operator may read no others;
				// of each, what the gate reads.
				&batchv1.Job{}: {Namespaces: map[string]cache.Config{hooksNamespaceOrNone(opts.HooksNamespace): {}}, Transform: slim.job},
			},
			DefaultWatchErrorHandler: watcherr.Handler,
			// The history hears of each record that leaves the open cache.
			NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
				if _, ok := obj.(*v1alpha1.NodeMaintenance); ok {
					lw = finished.Watching(lw)
				}
				return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
			},
		},
		Metrics:                 metricsOptions(opts),
		HealthProbeBindAddress:  opts.ProbeAddr,
		PprofBindAddress:        opts.PprofAddr,
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        "kmaint-operator.kmaint.io",
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		// A new leader must not act on approvals while the old one may still
		// write; releasing on a clean shutdown lets the next take over at once.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return nil, fmt.Errorf("new manager: %w", err)
	}
	if err := mgr.Add(finished); err != nil {
		return nil, fmt.Errorf("add history: %w", err)
	}
	// Every controller reads the open records and the finished ones as one.
	c := &history.Client{Client: mgr.GetClient(), History: finished, APIReader: mgr.GetAPIReader()}
	clientset, err := kubernetes.NewForConfig(builtinKinds(cfg))
	if err != nil {
		return nil, fmt.Errorf("clientset: %w", err)
	}
	// The drains and the gate's pod checks share their reads of the pods'
	// version: each is a consistent read.
	podsVersions := drain.NewVersions(clientset)
	sender := eventrec.New(clientset.EventsV1(), s, mgr.GetLogger().WithName("events"))
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	var prom *promapi.Client
	if opts.PrometheusURL != "" {
		if prom, err = promapi.New(opts.PrometheusURL, opts.PrometheusTimeout); err != nil {
			return nil, err
		}
	}
	rec, err := metrics.NewRecorder(ctrlmetrics.Registry)
	if err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	if err := mgr.Add(metrics.NewState(c, finished.Count, ctrlmetrics.Registry, clk)); err != nil {
		return nil, fmt.Errorf("add state metrics: %w", err)
	}
	if err := index.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	copts := controller.Options{
		SkipNameValidation: ptr.To(opts.AllowDuplicateControllerNames),
		// A request that hangs (a stalled connection to the API server or
		// Prometheus) fails the reconcile and is retried, rather than
		// stalling every pool queued behind it.
		ReconciliationTimeout: time.Minute,
	}
	// The gate and aftercare read the same nodes: each version is decoded
	// once for both.
	decoded := poolnodes.NewDecoded()
	// The gate and aftercare compile the pools' object checks once, for
	// both: the gate reports those that do not compile, aftercare's too.
	objectChecks, err := objectcheck.NewCompiler(objectcheck.Limits{})
	if err != nil {
		return nil, err
	}
	hookJobs := hooks.JobSettings{Namespace: opts.HooksNamespace, ServiceAccount: opts.HooksServiceAccount, PriorityClass: opts.HooksPriorityClass}
	g := &gate.Reconciler{
		Client:            c,
		Decoded:           decoded,
		Drainer:           &drain.Drainer{Client: clientset, Versions: podsVersions, HooksNamespace: opts.HooksNamespace},
		PodsVersions:      podsVersions,
		Recorder:          sender.Recorder("kmaint-gate"),
		Clock:             clk,
		DrainPollInterval: opts.DrainPollInterval,
		Metrics:           rec,

		BlockingQueryInterval: opts.BlockingQueryInterval,
		BlockingPodInterval:   opts.BlockingPodInterval,
		Pods:                  mgr.GetAPIReader(),
		ObjectChecks:          objectChecks,
		Hooks:                 hookJobs,
		EtcdReady: func(ctx context.Context) error {
			return clientset.Discovery().RESTClient().Get().AbsPath("/readyz/etcd").Do(ctx).Error()
		},
	}
	if prom != nil {
		// A nil *Prometheus in the interface would not read as nil.
		g.Prometheus = prom
	}
	if err := g.SetupWithManager(mgr, copts); err != nil {
		return nil, fmt.Errorf("set up gate: %w", err)
	}
	ac := &aftercare.Reconciler{
		Client:               c,
		Recorder:             sender.Recorder("kmaint-aftercare"),
		Clock:                clk,
		Metrics:              rec,
		Pods:                 mgr.GetAPIReader(),
		DaemonConfirmTimeout: opts.DaemonConfirmTimeout,
		NodeReturnTimeout:    opts.NodeReturnTimeout,
		Decoded:              decoded,
		ObjectChecks:         objectChecks,
		Hooks:                hookJobs,
	}
	if prom != nil {
		ac.Prometheus = prom
	}
	if err := ac.SetupWithManager(mgr, copts); err != nil {
		return nil, fmt.Errorf("set up aftercare: %w", err)
	}
	m := &maintenance.Reconciler{Client: c, Recorder: sender.Recorder("kmaint-maintenance"), Clock: clk, Metrics: rec}
	// The maintenance controller works one node per reconcile, and a
	// rollout changes thousands of nodes at once: with one worker its
	// records lagged minutes behind at 2000 nodes, each reconcile waiting
	// on its writes. Nodes are independent of each other; the workqueue
	// never runs one node's reconciles at the same time.
	mopts := copts
	mopts.MaxConcurrentReconciles = 4
	if err := m.SetupWithManager(ctx, mgr, mopts); err != nil {
		return nil, fmt.Errorf("set up maintenance: %w", err)
	}
	pc := &policy.Reconciler{Client: c, Recorder: sender.Recorder("kmaint-policy"), Clock: clk, Metrics: rec}
	if prom != nil {
		pc.Prometheus = prom
	}
	if err := pc.SetupWithManager(mgr, copts); err != nil {
		return nil, fmt.Errorf("set up policy: %w", err)
	}
	ams, err := opts.Silences.Alertmanagers()
	if err != nil {
		return nil, err
	}
	sc := &silences.Reconciler{Client: c, Recorder: sender.Recorder("kmaint-silences"), Clock: clk, Metrics: rec,
		Alertmanagers: ams, Margin: opts.Silences.Margin}
	// Alertmanager's answers take a while: a few nodes' calls at once.
	sopts := copts
	sopts.MaxConcurrentReconciles = 4
	if err := sc.SetupWithManager(mgr, sopts); err != nil {
		return nil, fmt.Errorf("set up silences: %w", err)
	}
	rt := &retention.Reconciler{Client: c, History: finished, Clock: clk, Metrics: rec,
		Keep: retention.Retention{PerNode: opts.HistoryPerNode, MaxAge: opts.HistoryMaxAge}}
	if err := rt.SetupWithManager(mgr, copts); err != nil {
		return nil, fmt.Errorf("set up retention: %w", err)
	}
	for _, kind := range unreadable.Kinds() {
		u := &unreadable.Reconciler{Client: c, APIReader: mgr.GetAPIReader(), Recorder: sender.Recorder("kmaint-unreadable"), Clock: clk, Kind: kind}
		if err := u.SetupWithManager(mgr, copts); err != nil {
			return nil, fmt.Errorf("set up the report of unreadable %ss: %w", kind.Name, err)
		}
	}
	if err := addAlertWebhook(mgr, sender, opts, clk); err != nil {
		return nil, err
	}
	if err := addNotifier(mgr, clientset, opts.Notify); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("add healthz: %w", err)
	}
	if err := mgr.AddReadyzCheck("cache", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("cache not synced")
		}
		if !finished.Synced() {
			return errors.New("finished NodeMaintenances not listed yet")
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("add readyz: %w", err)
	}
	return withEvents{Manager: mgr, events: sender}, nil
}

// The secure metrics ask the API server who the caller is and whether it
// may GET /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsOptions serves the metrics, over HTTPS to authorized callers only
// when opts.MetricsSecure says so (with a certificate controller-runtime
// makes at start, which Prometheus is told to accept: what protects the
// metrics is the caller's token).
func metricsOptions(opts Options) metricsserver.Options {
	o := metricsserver.Options{BindAddress: opts.MetricsAddr}
	if opts.MetricsSecure {
		o.SecureServing = true
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}

// The webhook reads its token Secret, makes and renews its certificate
// Secret, and publishes its CA's certificate in a ConfigMap, in the
// operator's own namespace only, and by name: RBAC cannot limit a create
// to a name, a read or a write it can, and admission confines the creates
// to these two objects (config/admission/operator-creates-policy.yaml).
// +kubebuilder:rbac:groups="",namespace=kmaint-system,resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",namespace=kmaint-system,resources=secrets,resourceNames=kmaint-alert-webhook;kmaint-alert-webhook-tls,verbs=get;update
// +kubebuilder:rbac:groups="",namespace=kmaint-system,resources=configmaps,verbs=create
// +kubebuilder:rbac:groups="",namespace=kmaint-system,resources=configmaps,resourceNames=kmaint-alert-webhook-ca,verbs=get;update

// DefaultAlertCertSecret is the name of the Secret holding the webhook's
// generated certificate, in the token Secret's namespace.
const DefaultAlertCertSecret = "kmaint-alert-webhook-tls"

// AlertCAConfigMap names the ConfigMap where the CA of the certificate in
// the Secret secret is published: kmaint-alert-webhook-ca for the default.
// People and Alertmanager read the CA there; the Secret, which holds the
// keys, need be readable by the operator only.
func AlertCAConfigMap(secret string) string { return strings.TrimSuffix(secret, "-tls") + "-ca" }

// alertService is the Service through which Alertmanager reaches the
// webhook (config/manager/service.yaml).
const alertService = "kmaint-operator"

// addAlertWebhook adds the Alertmanager webhook receiver, when asked for.
func addAlertWebhook(mgr manager.Manager, sender *eventrec.Sender, opts Options, clk clock.PassiveClock) error {
	if opts.AlertWebhookAddr == "" || opts.AlertWebhookAddr == "0" {
		return nil
	}
	ns, name, ok := strings.Cut(opts.AlertWebhookTokenSecret, "/")
	if !ok || ns == "" || name == "" {
		return fmt.Errorf("the alert webhook needs its token Secret as namespace/name, got %q", opts.AlertWebhookTokenSecret)
	}
	key := opts.AlertWebhookTokenKey
	if key == "" {
		key = "token"
	}
	m, err := alertwebhook.NewMetrics(ctrlmetrics.Registry)
	if err != nil {
		return fmt.Errorf("alert webhook metrics: %w", err)
	}
	certs, err := alertCertificates(mgr, opts, ns, clk)
	if err != nil {
		return err
	}
	srv := &alertwebhook.Server{
		BindAddress:  opts.AlertWebhookAddr,
		Certificates: certs,
		Handler: &alertwebhook.Handler{
			Tokens: &alertwebhook.SecretToken{Reader: mgr.GetAPIReader(), Namespace: ns, Name: name, Key: key},
			Sink: &policy.AlertSink{
				Client:    mgr.GetClient(),
				APIReader: mgr.GetAPIReader(),
				Recorder:  sender.Recorder("kmaint-alert-webhook"),
				Clock:     clk,
			},
			Metrics:   m,
			FiringTTL: opts.AlertWebhookFiringTTL,
			Clock:     clk,
		},
	}
	if err := mgr.Add(srv); err != nil {
		return fmt.Errorf("add alert webhook: %w", err)
	}
	return nil
}

// alertCertificates gives the webhook its certificates: mounted files when
// given, none when plain HTTP is asked for, and by default one generated
// and kept in a Secret.
func alertCertificates(mgr manager.Manager, opts Options, tokenNamespace string, clk clock.PassiveClock) (alertwebhook.Certificates, error) {
	switch {
	case opts.AlertWebhookInsecureHTTP:
		return nil, nil
	case opts.AlertWebhookCertFile != "":
		return &alertwebhook.FileCertificates{CertFile: opts.AlertWebhookCertFile, KeyFile: opts.AlertWebhookKeyFile}, nil
	}
	ns, name := tokenNamespace, DefaultAlertCertSecret
	if opts.AlertWebhookCertSecret != "" {
		ns, name, _ = strings.Cut(opts.AlertWebhookCertSecret, "/") // checked by Validate
	}
	hosts := opts.AlertWebhookCertHosts
	if len(hosts) == 0 {
		hosts = alertwebhook.ServiceHosts(alertService, ns)
	}
	// Read through the API server, not a cache: the operator may get only
	// the Secrets of its namespace, and watches none.
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("client for the alert webhook's certificate: %w", err)
	}
	certs := &alertwebhook.SecretCertificates{Client: c, Namespace: ns, Name: name, Hosts: hosts, CAConfigMap: AlertCAConfigMap(name)}
	if tc, ok := clk.(clock.WithTicker); ok {
		certs.Clock = tc
	}
	return certs, nil
}

// addNotifier adds the notifier, when asked for. It runs on the leader and
// only reads events, so nothing it meets (a receiver down or hanging, a
// URL that cannot be used) delays a reboot: it reports that and goes on.
func addNotifier(mgr manager.Manager, clientset kubernetes.Interface, opts notify.Options) error {
	if !opts.Enabled() {
		return nil
	}
	m, err := notify.NewMetrics(ctrlmetrics.Registry)
	if err != nil {
		return fmt.Errorf("notification metrics: %w", err)
	}
	n := notify.New(clientset, opts, m, mgr.GetLogger().WithName("notify"), clock.RealClock{})
	if err := mgr.Add(n); err != nil {
		return fmt.Errorf("add notifier: %w", err)
	}
	return nil
}

// Validate refuses options that cannot mean anything, naming the flag.
func (o Options) Validate() error {
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{
		{"--drain-poll-interval", o.DrainPollInterval},
		{"--prometheus-timeout", o.PrometheusTimeout},
		{"--blocking-query-interval", o.BlockingQueryInterval},
		{"--blocking-pod-interval", o.BlockingPodInterval},
		{"--daemon-confirm-timeout", o.DaemonConfirmTimeout},
		{"--node-return-timeout", o.NodeReturnTimeout},
	} {
		if d.value < 0 {
			return fmt.Errorf("%s=%s: must be positive (0 means the default)", d.flag, d.value)
		}
	}
	if o.HooksNamespace != "" {
		if errs := validation.IsDNS1123Label(o.HooksNamespace); len(errs) > 0 {
			return fmt.Errorf("--hooks-namespace=%q: not a namespace's name: %s", o.HooksNamespace, strings.Join(errs, "; "))
		}
		if reservedNamespace(o.HooksNamespace) {
			return fmt.Errorf("--hooks-namespace=%s: Kubernetes keeps that namespace for itself or for everyone, and hook pods may be privileged; name a namespace of kmaint's hooks alone (the manifests' kmaint-hooks)", o.HooksNamespace)
		}
	}
	for _, n := range []struct{ flag, value, what string }{
		{"--hooks-service-account", o.HooksServiceAccount, "service account"},
		{"--hooks-priority-class", o.HooksPriorityClass, "PriorityClass"},
	} {
		if errs := validation.IsDNS1123Subdomain(n.value); n.value != "" && len(errs) > 0 {
			return fmt.Errorf("%s=%q: not a %s's name: %s", n.flag, n.value, n.what, strings.Join(errs, "; "))
		}
	}
	if o.HistoryPerNode < 0 {
		return fmt.Errorf("--history-per-node=%d: must be 0 (no limit) or more", o.HistoryPerNode)
	}
	if o.HistoryMaxAge < 0 {
		return fmt.Errorf("--history-max-age=%s: must be 0 (no limit) or more", o.HistoryMaxAge)
	}
	if o.DaemonConfirmTimeout > 0 && o.DaemonConfirmTimeout < time.Second {
		return fmt.Errorf("--daemon-confirm-timeout=%s: no daemon starts that fast after a reboot; give at least 1s (the default is 10m)", o.DaemonConfirmTimeout)
	}
	// A held node's pods are listed once per interval: under a second is
	// a List a second per held node for nothing, over an hour leaves a
	// node waiting that long after its blocking pod went.
	if p := o.BlockingPodInterval; p != 0 && (p < time.Second || p > time.Hour) {
		return fmt.Errorf("--blocking-pod-interval=%s: give 1s to 1h (0 means the default, 30s)", p)
	}
	if o.NodeReturnTimeout > 0 && o.NodeReturnTimeout < time.Second {
		return fmt.Errorf("--node-return-timeout=%s: no node reboots that fast; give at least 1s (the default is 15m)", o.NodeReturnTimeout)
	}
	if (o.AlertWebhookCertFile == "") != (o.AlertWebhookKeyFile == "") {
		return errors.New("--alert-webhook-cert-file and --alert-webhook-key-file go together: give both or neither")
	}
	if ttl := o.AlertWebhookFiringTTL; ttl < 0 || ttl > alertwebhook.MaxFiringTTL {
		return fmt.Errorf("--alert-webhook-firing-ttl=%s: must be positive and at most %s (0 means the default, %s)", ttl, alertwebhook.MaxFiringTTL, alertwebhook.DefaultFiringTTL)
	}
	if c := o.AlertWebhookCertSecret; c != "" {
		if ns, name, ok := strings.Cut(c, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("--alert-webhook-cert-secret=%q: want namespace/name", c)
		}
	}
	// One way to serve the webhook: a generated certificate (the default),
	// mounted files, or plain HTTP.
	var ways []string
	if o.AlertWebhookCertFile != "" || o.AlertWebhookKeyFile != "" {
		ways = append(ways, "--alert-webhook-cert-file/--alert-webhook-key-file")
	}
	if o.AlertWebhookCertSecret != "" || len(o.AlertWebhookCertHosts) > 0 {
		ways = append(ways, "--alert-webhook-cert-secret/--alert-webhook-cert-hosts")
	}
	if o.AlertWebhookInsecureHTTP {
		ways = append(ways, "--alert-webhook-insecure-http")
	}
	if len(ways) > 1 {
		return fmt.Errorf("%s: choose one way to serve the alert webhook", strings.Join(ways, " and "))
	}
	return o.Notify.Validate()
}

// builtinKinds is cfg for a clientset that reads and writes built-in kinds
// only (the drains' pod lists and evictions, the notifier's Events): in
// protobuf, as controller-runtime's client asks for them. A list of a
// node's pods, several per reboot, costs the operator and the API server a
// fraction of its JSON's encoding and decoding.
func builtinKinds(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.ContentType = runtime.ContentTypeProtobuf
	out.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return out
}

// Run runs the operator until ctx is done.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	mgr, err := NewManager(ctx, cfg, opts)
	if err != nil {
		return err
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}
