package policy_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/operator/alertwebhook"
	"github.com/kmaint/kmaint/test/harness"
)

// alert is one alert of an Alertmanager webhook payload, firing for a
// minute, as Alertmanager sends it (a firing alert's endsAt is zero).
func alert(status, name, node, severity string) map[string]any {
	return map[string]any{
		"status":   status,
		"labels":   map[string]string{"alertname": name, "node": node, "severity": severity},
		"startsAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano),
		"endsAt":   "0001-01-01T00:00:00Z",
	}
}

// webhook is the operator's alert webhook as Alertmanager reaches it.
type webhook struct {
	url    string
	client *http.Client
}

// startWebhook runs the operator with its webhook on a free port, the token
// "s3cret" in Secret default/alert-token. Unless opts ask for plain HTTP, the
// client trusts only the CA of the certificate the operator generated into
// Secret default/kmaint-alert-webhook-tls and checks the Service's name, as
// Alertmanager is told to in operator/policy/README.md ("Alert trigger").
func startWebhook(t *testing.T, opts operator.Options) webhook {
	t.Helper()
	g := NewWithT(t)
	harness.CreateTemporary(t, bed, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "alert-token"},
		StringData: map[string]string{"token": "s3cret"},
	})
	addr := harness.FreeAddr(t)
	opts.AlertWebhookAddr, opts.AlertWebhookTokenSecret = addr, "default/alert-token"
	harness.StartOperatorWith(t, bed, opts)
	if opts.AlertWebhookInsecureHTTP {
		return webhook{url: "http://" + addr + "/alerts", client: http.DefaultClient}
	}
	w := webhook{url: "https://" + addr + "/alerts", client: tlsClient(g)}
	g.Eventually(func() int { code, _, _ := w.try("wrong"); return code }, timeout).Should(Equal(http.StatusUnauthorized))
	return w
}

// tlsClient trusts the CA in the operator's certificate Secret, for the
// kmaint-operator Service's name in "default".
func tlsClient(g Gomega) *http.Client {
	pool := x509.NewCertPool()
	g.Eventually(func(g Gomega) {
		var s corev1.Secret
		g.Expect(bed.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: operator.DefaultAlertCertSecret}, &s)).To(Succeed())
		g.Expect(pool.AppendCertsFromPEM(s.Data["ca.crt"])).To(BeTrue())
	}, timeout).Should(Succeed())
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "kmaint-operator.default.svc"}}}
}

// post sends the alerts with the token and returns the response's code and
// body.
func (w webhook) post(t *testing.T, token string, alerts ...map[string]any) (int, string) {
	t.Helper()
	code, body, err := w.try(token, alerts...)
	if err != nil {
		t.Fatal(err)
	}
	return code, body
}

// try is post, returning the error of a request that got no response.
func (w webhook) try(token string, alerts ...map[string]any) (int, string, error) {
	body, err := json.Marshal(map[string]any{"version": "4", "status": "firing", "receiver": "kmaint", "alerts": alerts})
	if err != nil {
		return 0, "", err
	}
	req, err := http.NewRequest(http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(text), err
}

// send posts the alerts with the right token and expects 200.
func (w webhook) send(t *testing.T, alerts ...map[string]any) {
	t.Helper()
	if code, body := w.post(t, "s3cret", alerts...); code != http.StatusOK {
		t.Fatalf("POST %s: %d %s", w.url, code, body)
	}
}

// Alertmanager posts a firing alert: the node it names gets a request at
// once; alerts of other names or severities, or naming no node, do not;
// a resolved alert takes the node off the candidates.
func TestAlertWebhookRaisesRequests(t *testing.T) {
	g := NewWithT(t)
	nodes := harness.CreateNodes(t, bed, "alert", "alert", 3)
	w := startWebhook(t, operator.Options{})
	p := newPolicy("alert", "alert", func(s *v1alpha1.RebootPolicySpec) {
		s.Alert = &v1alpha1.AlertTrigger{AlertName: "NodeMemoryFragmented", Matchers: map[string]string{"severity": "critical"}}
	})
	p.Spec.MaxConcurrentRequests = &intstr.IntOrString{Type: intstr.String, StrVal: "100%"}
	harness.CreateTemporary(t, bed, p)
	seen(t, "alert")

	sent := time.Now()
	firing := alert("firing", "NodeMemoryFragmented", nodes[0], "critical")
	w.send(t,
		firing,
		alert("firing", "NodeMemoryFragmented", nodes[1], "warning"),
		alert("firing", "SomethingElse", nodes[2], "critical"),
		alert("firing", "NodeMemoryFragmented", "ghost", "critical"),
	)
	g.Eventually(func(g Gomega) {
		reqs := harness.PolicyMaintenances(g, bed, "alert")
		g.Expect(reqs).To(HaveKey(nodes[0]))
		g.Expect(reqs[nodes[0]][0].Spec.Source).To(Equal(v1alpha1.SourceAlert))
		g.Expect(reqs[nodes[0]][0].Spec.Reason).To(ContainSubstring("alert NodeMemoryFragmented firing since"))
	}, timeout, 20*time.Millisecond).Should(Succeed())
	t.Logf("webhook to NodeMaintenance: %s", time.Since(sent))
	g.Eventually(func(g Gomega) {
		g.Expect(harness.EventReasons(g, bed, "RebootPolicy", "alert", "")).To(ContainElement("AlertNodeUnknown"))
	}, timeout).Should(Succeed())

	// Alertmanager sends the same group again: nothing more.
	w.send(t, firing)
	g.Consistently(func(g Gomega) {
		reqs := harness.PolicyMaintenances(g, bed, "alert")
		g.Expect(reqs).To(HaveLen(1))
		g.Expect(reqs[nodes[0]]).To(HaveLen(1))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())

	// The alert resolves: the node is no longer a candidate, and the record
	// remembers the episode ended.
	resolved := maps.Clone(firing)
	resolved["status"], resolved["endsAt"] = "resolved", time.Now().UTC().Format(time.RFC3339Nano)
	w.send(t, resolved)
	g.Eventually(func(g Gomega) {
		p := harness.GetPolicy(g, bed, "alert")
		g.Expect(p.Status.Candidates).To(BeEmpty())
		eps := record(g, "alert")[nodes[0]]
		g.Expect(eps).To(HaveLen(1))
		g.Expect(eps[0].Ended.IsZero()).To(BeFalse(), "episode %+v not ended", eps[0])
	}, timeout).Should(Succeed())
}

// record reads a policy's alert record.
func record(g Gomega, policy string) alertwebhook.Record {
	raw, ok := harness.GetPolicy(g, bed, policy).Annotations[v1alpha1.FiringAlertsAnnotation]
	g.Expect(ok).To(BeTrue(), "policy %s has no alert record", policy)
	r, err := alertwebhook.ParseRecord(raw)
	g.Expect(err).NotTo(HaveOccurred())
	return r
}
