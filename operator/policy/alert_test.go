package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/sim"
)

// alert is one alert of an Alertmanager webhook payload.
func alert(status, name, node, severity string) map[string]any {
	return map[string]any{
		"status":   status,
		"labels":   map[string]string{"alertname": name, "node": node, "severity": severity},
		"startsAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
		"endsAt":   "0001-01-01T00:00:00Z",
	}
}

func post(t *testing.T, url, token string, alerts ...map[string]any) int {
	t.Helper()
	body, err := json.Marshal(map[string]any{"version": "4", "status": "firing", "receiver": "kmaint", "alerts": alerts})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Alertmanager posts a firing alert: the node it names gets a request at
// once; alerts of other names or severities, or naming no node, do not;
// a resolved alert takes the node off the candidates.
func TestAlertWebhookRaisesRequests(t *testing.T) {
	g := NewWithT(t)
	nodes := harness.CreateNodes(t, bed, "alert", "alert", 3)
	harness.CreateTemporary(t, bed, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "alert-token"},
		StringData: map[string]string{"token": "s3cret"},
	})
	addr := harness.FreeAddr(t)
	op, err := sim.StartOperator(context.Background(), bed.Config, operator.Options{
		AlertWebhookAddr:        addr,
		AlertWebhookTokenSecret: "default/alert-token",
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = op.Stop() })
	p := newPolicy("alert", "alert", func(s *v1alpha1.RebootPolicySpec) {
		s.Alert = &v1alpha1.AlertTrigger{AlertName: "NodeMemoryFragmented", Matchers: map[string]string{"severity": "critical"}}
	})
	p.Spec.MaxConcurrentRequests = &intstr.IntOrString{Type: intstr.String, StrVal: "100%"}
	harness.CreateTemporary(t, bed, p)
	url := fmt.Sprintf("http://%s/alerts", addr)
	g.Eventually(func() int { return post(t, url, "wrong") }, timeout).Should(Equal(http.StatusUnauthorized))

	sent := time.Now()
	g.Expect(post(t, url, "s3cret",
		alert("firing", "NodeMemoryFragmented", nodes[0], "critical"),
		alert("firing", "NodeMemoryFragmented", nodes[1], "warning"),
		alert("firing", "SomethingElse", nodes[2], "critical"),
		alert("firing", "NodeMemoryFragmented", "ghost", "critical"),
	)).To(Equal(http.StatusOK))
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
	g.Expect(post(t, url, "s3cret", alert("firing", "NodeMemoryFragmented", nodes[0], "critical"))).To(Equal(http.StatusOK))
	g.Consistently(func(g Gomega) {
		reqs := harness.PolicyMaintenances(g, bed, "alert")
		g.Expect(reqs).To(HaveLen(1))
		g.Expect(reqs[nodes[0]]).To(HaveLen(1))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())

	// The alert resolves: the node is no longer a candidate.
	g.Expect(post(t, url, "s3cret", alert("resolved", "NodeMemoryFragmented", nodes[0], "critical"))).To(Equal(http.StatusOK))
	g.Eventually(func(g Gomega) {
		p := harness.GetPolicy(g, bed, "alert")
		g.Expect(p.Annotations[v1alpha1.FiringAlertsAnnotation]).To(Equal("{}"))
		g.Expect(p.Status.Candidates).To(BeEmpty())
	}, timeout).Should(Succeed())
}
