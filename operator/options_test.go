package operator

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
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
		"a certificate without its key":      {opts: Options{AlertWebhookCertFile: "tls.crt"}, wantErr: "go together"},
		"a key without its certificate":      {opts: Options{AlertWebhookKeyFile: "tls.key"}, wantErr: "go together"},
		"both":                               {opts: Options{AlertWebhookCertFile: "tls.crt", AlertWebhookKeyFile: "tls.key", DrainPollInterval: time.Second}},
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
