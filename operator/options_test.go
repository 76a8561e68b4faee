package operator

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/operator/notify"
)

func TestOptionsValidate(t *testing.T) {
	cases := map[string]struct {
		opts Options
		// wantErr is a substring of the error; empty when the options are fine.
		wantErr string
	}{
		"defaults":                           {},
		"a negative drain poll interval":     {opts: Options{DrainPollInterval: -time.Second}, wantErr: "--drain-poll-interval=-1s"},
		"a negative Prometheus timeout":      {opts: Options{PrometheusTimeout: -1}, wantErr: "--prometheus-timeout"},
		"a negative blocking query interval": {opts: Options{BlockingQueryInterval: -time.Minute}, wantErr: "--blocking-query-interval"},
		"a negative daemon confirm timeout":  {opts: Options{DaemonConfirmTimeout: -time.Minute}, wantErr: "--daemon-confirm-timeout=-1m0s: must be positive"},
		"a daemon confirm timeout under 1s":  {opts: Options{DaemonConfirmTimeout: time.Millisecond}, wantErr: "--daemon-confirm-timeout=1ms: no daemon starts that fast"},
		"a negative node return timeout":     {opts: Options{NodeReturnTimeout: -time.Minute}, wantErr: "--node-return-timeout=-1m0s: must be positive"},
		"a node return timeout under 1s":     {opts: Options{NodeReturnTimeout: time.Millisecond}, wantErr: "--node-return-timeout=1ms: no node reboots that fast"},
		"a node return timeout of 1s":        {opts: Options{NodeReturnTimeout: time.Second}},
		"a blocking pod interval under 1s":   {opts: Options{BlockingPodInterval: time.Millisecond}, wantErr: "--blocking-pod-interval=1ms: give 1s to 1h"},
		"a blocking pod interval over 1h":    {opts: Options{BlockingPodInterval: 2 * time.Hour}, wantErr: "--blocking-pod-interval=2h0m0s: give 1s to 1h"},
		"a blocking pod interval of 1h":      {opts: Options{BlockingPodInterval: time.Hour}},
		"a certificate without its key":      {opts: Options{AlertWebhookCertFile: "tls.crt"}, wantErr: "go together"},
		"a key without its certificate":      {opts: Options{AlertWebhookKeyFile: "tls.key"}, wantErr: "go together"},
		"both":                               {opts: Options{AlertWebhookCertFile: "tls.crt", AlertWebhookKeyFile: "tls.key", DrainPollInterval: time.Second}},
		"a negative firing TTL":              {opts: Options{AlertWebhookFiringTTL: -time.Second}, wantErr: "--alert-webhook-firing-ttl=-1s: must be positive and at most 168h0m0s"},
		"a firing TTL over a week":           {opts: Options{AlertWebhookFiringTTL: 8 * 24 * time.Hour}, wantErr: "--alert-webhook-firing-ttl=192h0m0s"},
		"a firing TTL of a week":             {opts: Options{AlertWebhookFiringTTL: 7 * 24 * time.Hour}},
		"a notify reason that is not one":    {opts: Options{Notify: notify.Options{URLsFile: "urls", Reasons: []string{"drain failed"}}}, wantErr: "--notify-reasons"},
		"a negative notify interval":         {opts: Options{Notify: notify.Options{Interval: -time.Second}}, wantErr: "--notify-interval"},
		"plain HTTP":                         {opts: Options{AlertWebhookInsecureHTTP: true}},
		"a certificate secret and hosts":     {opts: Options{AlertWebhookCertSecret: "ns/tls", AlertWebhookCertHosts: []string{"a.example"}}},
		"a certificate secret without namespace": {
			opts: Options{AlertWebhookCertSecret: "tls"}, wantErr: `--alert-webhook-cert-secret="tls": want namespace/name`,
		},
		"a certificate secret of three parts": {opts: Options{AlertWebhookCertSecret: "a/b/c"}, wantErr: "want namespace/name"},
		"plain HTTP and certificate files": {
			opts:    Options{AlertWebhookInsecureHTTP: true, AlertWebhookCertFile: "tls.crt", AlertWebhookKeyFile: "tls.key"},
			wantErr: "--alert-webhook-cert-file/--alert-webhook-key-file and --alert-webhook-insecure-http: choose one way to serve the alert webhook",
		},
		"plain HTTP and a certificate secret": {
			opts: Options{AlertWebhookInsecureHTTP: true, AlertWebhookCertSecret: "ns/tls"}, wantErr: "choose one way",
		},
		"certificate files and hosts for a generated one": {
			opts: Options{AlertWebhookCertFile: "tls.crt", AlertWebhookKeyFile: "tls.key", AlertWebhookCertHosts: []string{"a"}}, wantErr: "choose one way",
		},
		"a negative history per node": {opts: Options{HistoryPerNode: -1}, wantErr: "--history-per-node=-1"},
		"a negative history age":      {opts: Options{HistoryMaxAge: -time.Hour}, wantErr: "--history-max-age=-1h0m0s"},
		"the history's defaults":      {opts: Options{HistoryPerNode: 10, HistoryMaxAge: 90 * 24 * time.Hour}},
		"the hooks' namespace, service account and class": {
			opts: Options{HooksNamespace: "kmaint-hooks", HooksServiceAccount: "kmaint-hook", HooksPriorityClass: "kmaint-hook"},
		},
		"hooks in default":     {opts: Options{HooksNamespace: "default"}, wantErr: "--hooks-namespace=default: Kubernetes keeps that namespace"},
		"hooks in kube-system": {opts: Options{HooksNamespace: "kube-system"}, wantErr: "--hooks-namespace=kube-system: Kubernetes keeps"},
		"a hooks service account not a name": {
			opts: Options{HooksServiceAccount: "Cluster Admin"}, wantErr: `--hooks-service-account="Cluster Admin": not a service account's name`,
		},
		"a hooks priority class not a name": {
			opts: Options{HooksPriorityClass: "a/b"}, wantErr: `--hooks-priority-class="a/b": not a PriorityClass's name`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			err := tc.opts.Validate()
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
		})
	}
}
