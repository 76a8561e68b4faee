// Command kmaint-operator runs kmaint's controllers (package operator: the
// approval gate, the NodeMaintenance lifecycle, the RebootPolicy controller
// and the Alertmanager webhook receiver) against the cluster of the current
// kubeconfig or service account.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	// Maintenance windows name IANA time zones; the image need not ship them.
	_ "time/tzdata"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kmaint/kmaint/internal/version"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/operator/notify"
)

func main() {
	opts := operator.Options{}
	fs := flag.NewFlagSet("kmaint-operator", flag.ExitOnError)
	fs.StringVar(&opts.MetricsAddr, "metrics-bind-address", ":8080", `Address of the Prometheus metrics endpoint; "0" turns it off.`)
	fs.BoolVar(&opts.MetricsSecure, "metrics-secure", false, "Serve the metrics over HTTPS to callers the API server authenticates and authorizes for GET /metrics (a ClusterRole with nonResourceURLs [/metrics]); the manifests turn it on.")
	fs.StringVar(&opts.ProbeAddr, "health-probe-bind-address", ":8081", `Address of /healthz and /readyz; "0" turns them off.`)
	fs.StringVar(&opts.PprofAddr, "pprof-bind-address", "0", `Address of Go's profiles (/debug/pprof/); "0" turns them off. They tell what the operator spends its time and memory on; keep the address private.`)
	fs.BoolVar(&opts.LeaderElection, "leader-elect", false, "Elect one active replica; use it whenever more than one runs.")
	fs.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader election Lease (default: the pod's own).")
	fs.StringVar(&opts.HooksNamespace, "hooks-namespace", "", "Namespace the pools' Job hooks run in (the manifests name kmaint-hooks); empty runs none, and a pool's Job hook then fails as one that cannot start.")
	fs.StringVar(&opts.HooksServiceAccount, "hooks-service-account", "", "Service account, in the hooks namespace, that every hook's pod runs under, whatever its pool's template says (the manifests name kmaint-hook); empty means the namespace's default one.")
	fs.StringVar(&opts.HooksPriorityClass, "hooks-priority-class", "", "PriorityClass of every hook's pod, so that the scheduler may preempt lower-priority pods to fit it on its node (the manifests name kmaint-hook); empty leaves the template's.")
	fs.DurationVar(&opts.DrainPollInterval, "drain-poll-interval", 0, "How often a drain in progress is stepped (default 2s).")
	fs.DurationVar(&opts.DaemonConfirmTimeout, "daemon-confirm-timeout", 0, "How long a node may be back from its reboot (Ready, new boot ID) without its daemon confirming it; then the reboot is completed without it and the daemon reported missing (default 10m).")
	fs.DurationVar(&opts.NodeReturnTimeout, "node-return-timeout", 0, "How long a node approved to reboot may take to come back (new boot ID, Ready); then it is reported not back (NodeNotBack), keeping its slot in the pool's budget (default 15m).")
	fs.StringVar(&opts.PrometheusURL, "prometheus-url", "", "Prometheus server for RebootPolicy queries and pool blocking queries, e.g. http://prometheus.monitoring:9090.")
	fs.DurationVar(&opts.PrometheusTimeout, "prometheus-timeout", 0, "Timeout of each Prometheus query (default 10s).")
	fs.DurationVar(&opts.BlockingQueryInterval, "blocking-query-interval", 0, "How often a pool's blocking queries are asked while requests wait on them (default 30s).")
	fs.DurationVar(&opts.BlockingPodInterval, "blocking-pod-interval", 0, "How long a node whose pods hold its admission (do-not-disrupt, blockingPodSelector) waits before its pods are listed again: 1s to 1h (default 30s).")
	fs.StringVar(&opts.AlertWebhookAddr, "alert-webhook-bind-address", "0", `Address of the Alertmanager webhook receiver (path /alerts), e.g. ":9443"; "0" turns it off.`)
	fs.StringVar(&opts.AlertWebhookTokenSecret, "alert-webhook-token-secret", "", "Secret (namespace/name) holding the bearer token Alertmanager must send; required with the receiver.")
	fs.StringVar(&opts.AlertWebhookTokenKey, "alert-webhook-token-key", "token", "Key of the token in that Secret.")
	fs.StringVar(&opts.AlertWebhookCertSecret, "alert-webhook-cert-secret", "", `Secret (namespace/name) where the operator keeps the receiver's generated CA and certificate, creating and renewing them (default: `+operator.DefaultAlertCertSecret+` in the token Secret's namespace).`)
	fs.Func("alert-webhook-cert-hosts", "Comma-separated DNS names and IPs the generated certificate names (default: the kmaint-operator Service's names in the certificate Secret's namespace).", func(v string) error {
		for h := range strings.SplitSeq(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				opts.AlertWebhookCertHosts = append(opts.AlertWebhookCertHosts, h)
			}
		}
		return nil
	})
	fs.StringVar(&opts.AlertWebhookCertFile, "alert-webhook-cert-file", "", "PEM certificate to serve the receiver with instead of a generated one, e.g. a mounted cert-manager Secret (reloaded when it changes).")
	fs.StringVar(&opts.AlertWebhookKeyFile, "alert-webhook-key-file", "", "PEM key for --alert-webhook-cert-file.")
	fs.BoolVar(&opts.AlertWebhookInsecureHTTP, "alert-webhook-insecure-http", false, "Serve the receiver over plain HTTP, the bearer token in the clear (only behind a mesh or on a private network).")
	fs.DurationVar(&opts.AlertWebhookFiringTTL, "alert-webhook-firing-ttl", 0, "How long a firing alert counts after it was last received, unless its endsAt is sooner; keep it above Alertmanager's repeat_interval (default 12h, at most 168h).")
	fs.IntVar(&opts.HistoryPerNode, "history-per-node", 10, "Finished NodeMaintenances kept per node; older ones are deleted (0: no limit). A node's last reboot, and each policy's last request for it, are always kept.")
	fs.DurationVar(&opts.HistoryMaxAge, "history-max-age", 90*24*time.Hour, "Finished NodeMaintenances older than this are deleted (0: kept for ever), but for those always kept.")
	fs.StringVar(&opts.Notify.URLsFile, "notify-urls-file", "", "File of shoutrrr URLs (slack://, teams://, mattermost://, telegram://, generic://...), one a line, to send notifications to, e.g. a Secret mounted into the pod; read again when it changes. Empty: no notifications.")
	fs.Func("notify-reasons", "Comma-separated Event reasons to notify (default "+strings.Join(notify.DefaultReasons(), ",")+").", func(v string) error {
		for r := range strings.SplitSeq(v, ",") {
			if r = strings.TrimSpace(r); r != "" {
				opts.Notify.Reasons = append(opts.Notify.Reasons, r)
			}
		}
		return nil
	})
	fs.DurationVar(&opts.Notify.Interval, "notify-interval", 0, "Least time between two notifications; events in between go out together (default 1m).")
	fs.DurationVar(&opts.Notify.SendTimeout, "notify-send-timeout", 0, "How long a receiver may take to accept a notification; one that takes longer is skipped until it answers (default 10s).")
	fs.IntVar(&opts.Notify.MaxLines, "notify-max-lines", 0, "Events listed in one notification; more are counted by reason (default 10, at most 20).")
	fs.StringVar(&opts.Notify.Title, "notify-title", "", `Title of every notification, e.g. the cluster's name (default "kmaint").`)
	fs.Func("alertmanager-url", "Alertmanager that holds the silences of nodes in flight (pools' spec.silences), e.g. https://alertmanager.monitoring:9093; repeat or separate with commas for Alertmanagers that do not share silences (one URL per Alertmanager cluster).", func(v string) error {
		for u := range strings.SplitSeq(v, ",") {
			if u = strings.TrimSpace(u); u != "" {
				opts.Silences.URLs = append(opts.Silences.URLs, u)
			}
		}
		return nil
	})
	fs.StringVar(&opts.Silences.CredentialsDir, "alertmanager-credentials-dir", "", `Directory of the credentials sent to Alertmanager, read again at each call (a mounted Secret): a file "token" (bearer), or files "username" and "password" (basic auth).`)
	fs.StringVar(&opts.Silences.CAFile, "alertmanager-ca-file", "", "PEM CA that signs the Alertmanagers' certificates (default: the system's roots).")
	fs.StringVar(&opts.Silences.CertFile, "alertmanager-cert-file", "", "PEM client certificate the operator shows Alertmanager, when it asks for one.")
	fs.StringVar(&opts.Silences.KeyFile, "alertmanager-key-file", "", "PEM key for --alertmanager-cert-file.")
	fs.DurationVar(&opts.Silences.Timeout, "alertmanager-timeout", 0, "Timeout of each call to Alertmanager (default 10s).")
	fs.DurationVar(&opts.Silences.Margin, "silence-margin", 0, "How far a silence's end lies ahead of the last time the operator saw its node in flight: it is extended while the node is, and ends within this after (default 10m, at least 2m).")
	showVersion := fs.Bool("version", false, "Print the version and exit.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	_ = fs.Parse(os.Args[1:])
	v := version.Get()
	if *showVersion {
		fmt.Println(v)
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	ctrl.Log.WithName("setup").Info("Starting kmaint-operator", "version", v.Version, "commit", v.Commit, "go", v.GoVersion,
		"defaultGOGC", operator.SetDefaultGCPercent(os.LookupEnv))

	// The chat services' clients (package notify) send with
	// http.DefaultClient, which has no timeout: a receiver that accepts a
	// connection and never answers would hold its goroutine, and keep its
	// notifications skipped, for ever. Nothing else in the operator uses it.
	http.DefaultClient.Timeout = time.Minute

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kmaint-operator: no cluster to talk to:", err)
		os.Exit(1)
	}
	if err := operator.Run(ctx, cfg, opts); err != nil {
		fmt.Fprintln(os.Stderr, "kmaint-operator:", err)
		os.Exit(1)
	}
}
