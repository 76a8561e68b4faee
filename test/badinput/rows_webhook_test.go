package badinput

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/operator/alertwebhook"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/manifests"
)

const (
	webhookSurface = "Alertmanager webhook"
	alertPolicy    = "matrix-alerts"
	alertName      = "MatrixNodeBroken"
	webhookToken   = "matrix-webhook-token"
)

// webhookTarget is the operator's Alertmanager receiver, served over TLS
// from the certificate the operator generates, as it is by default.
type webhookTarget struct {
	addr   string
	client *http.Client
}

func startWebhookTarget(t *testing.T) *webhookTarget {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(bed.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: manifests.Namespace, Name: "kmaint-alert-webhook"},
		StringData: map[string]string{"token": webhookToken},
	})).To(Succeed())
	// A policy that takes the matrix's alerts for the open nodes: no bad
	// payload may make it raise a request.
	harness.Create(t, bed, &v1alpha1.RebootPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: alertPolicy},
		Spec: v1alpha1.RebootPolicySpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{poolLabel: "open"}},
			Alert:        &v1alpha1.AlertTrigger{AlertName: alertName},
		},
	})
	return &webhookTarget{addr: harness.FreeAddr(t)}
}

func (w *webhookTarget) options() operator.Options {
	return operator.Options{
		AlertWebhookAddr:        w.addr,
		AlertWebhookTokenSecret: manifests.Namespace + "/kmaint-alert-webhook",
	}
}

// trust waits for the certificate the running operator generated and
// trusts its CA, as Alertmanager's tls_config would.
func (w *webhookTarget) trust(t *testing.T) {
	g := NewWithT(t)
	secret := &corev1.Secret{}
	g.Eventually(func() error {
		return bed.Client.Get(context.Background(), client.ObjectKey{Namespace: manifests.Namespace, Name: operator.DefaultAlertCertSecret}, secret)
	}).WithTimeout(time.Minute).Should(Succeed(), "the operator made no certificate Secret")
	roots := x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(secret.Data["ca.crt"])).To(BeTrue(), "no ca.crt in the Secret")
	w.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "kmaint-operator." + manifests.Namespace + ".svc"},
	}}
	g.Eventually(func() error {
		return w.post(http.MethodPost, "application/json", webhookToken, mustJSON(payload()))
	}).WithTimeout(time.Minute).Should(Succeed(), "the webhook serves TLS")
}

// post sends body as Alertmanager would, with header changes; a reply that
// is not 2xx is returned as an error holding its status and text.
func (w *webhookTarget) post(method, contentType, token string, body []byte) error {
	req, err := http.NewRequest(method, "https://"+w.addr+"/alerts", bytes.NewReader(body))
	if err != nil {
		return err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s", resp.Status, text)
	}
	return nil
}

// alert is one alert of a payload, firing for node since startsAt.
func alert(node string, kv ...any) map[string]any {
	return with(map[string]any{
		"status":      "firing",
		"labels":      map[string]any{"alertname": alertName, "node": node},
		"annotations": map[string]any{},
		"startsAt":    time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
		"endsAt":      "0001-01-01T00:00:00Z",
		"fingerprint": "matrix-" + node,
	}, kv...)
}

func payload(alerts ...any) map[string]any {
	return map[string]any{
		"version":     "4",
		"groupKey":    `{}:{alertname="` + alertName + `"}`,
		"status":      "firing",
		"receiver":    "kmaint",
		"groupLabels": map[string]any{"alertname": alertName},
		"externalURL": "http://alertmanager:9093",
		"alerts":      alerts,
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func webhookRows() []row {
	refuse := func(name, says string, send func(w *webhookTarget) error) row {
		return row{surface: webhookSurface, name: name, want: refusedNaming(says),
			send: func(t *testing.T, e *env) (shown, error) { return nil, send(e.webhook) }}
	}
	body := func(v any) func(w *webhookTarget) error {
		return func(w *webhookTarget) error {
			return w.post(http.MethodPost, "application/json", webhookToken, mustJSON(v))
		}
	}
	good := mustJSON(payload(alert(openNodes[0])))
	// Small alerts, so that the count is refused and not the body's size.
	manyAlerts := make([]any, alertwebhook.DefaultMaxAlerts+1)
	for i := range manyAlerts {
		manyAlerts[i] = map[string]any{"status": "firing", "labels": map[string]any{"a": "b"}}
	}
	return []row{
		refuse("GET", "POST", func(w *webhookTarget) error { return w.post(http.MethodGet, "", webhookToken, nil) }),
		refuse("no token", "bearer token", func(w *webhookTarget) error { return w.post(http.MethodPost, "application/json", "", good) }),
		refuse("wrong token", "invalid bearer token", func(w *webhookTarget) error {
			return w.post(http.MethodPost, "application/json", "guess", good)
		}),
		refuse("token of another Secret key", "invalid bearer token", func(w *webhookTarget) error {
			return w.post(http.MethodPost, "application/json", strings.ToUpper(webhookToken), good)
		}),
		refuse("form content type", "content type", func(w *webhookTarget) error {
			return w.post(http.MethodPost, "application/x-www-form-urlencoded", webhookToken, good)
		}),
		refuse("body of 10 MiB", "body larger", func(w *webhookTarget) error {
			return w.post(http.MethodPost, "application/json", webhookToken, bytes.Repeat([]byte(" "), 10<<20))
		}),
		refuse("not JSON", "invalid JSON", func(w *webhookTarget) error {
			return w.post(http.MethodPost, "application/json", webhookToken, []byte("alerts: all of them"))
		}),
		refuse("JSON array", "invalid", body([]any{payload(alert(openNodes[0]))})),
		refuse("version 3", "version", body(with(payload(alert(openNodes[0])), "version", "3"))),
		refuse("one alert past the limit", "max_alerts", body(payload(manyAlerts...))),
		refuse("alert without labels", "labels", body(payload(alert(openNodes[0], "labels", nil)))),
		refuse("alert with status exploding", "status", body(payload(alert(openNodes[0], "status", "exploding")))),
		refuse("startsAt not a time", "startsAt", body(payload(alert(openNodes[0], "startsAt", "yesterday")))),
		refuse("labels not a map", "labels", body(payload(alert(openNodes[0], "labels", []any{"node"})))),
		refuse("startsAt in year 9999", "startsAt", body(payload(alert(openNodes[0], "startsAt", "9999-01-01T00:00:00Z")))),
		refuse("startsAt tomorrow", "startsAt", body(payload(alert(openNodes[0], "startsAt", time.Now().Add(24*time.Hour).UTC().Format(time.RFC3339))))),
		refuse("endsAt before startsAt", "endsAt", body(payload(alert(openNodes[0],
			"endsAt", time.Now().Add(-2*time.Hour).UTC().Format(time.RFC3339))))),
		refuse("alerts not a list", "alerts", body(with(payload(), "alerts", "all"))),
		refuse("label of 1 MiB", "body larger", body(payload(alert(openNodes[0], "labels",
			map[string]any{"alertname": alertName, "node": strings.Repeat("n", 1<<20)})))),
	}
}
