package amtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/test/amtest"
)

// An alert reaches the webhook unless a silence mutes it; then
// Alertmanager lists it as suppressed.
func TestAlertsReachTheReceiverUnlessSilenced(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	recv := amtest.NewReceiver(t)
	am := amtest.StartWith(t, amtest.Options{Webhook: recv.URL()})

	g.Expect(am.Fire(ctx, map[string]string{"alertname": "Down", "node": "loud"}, time.Now().Add(time.Minute))).To(Succeed())
	g.Eventually(recv.Notified, 30*time.Second, 200*time.Millisecond).Should(ContainElement(HaveKeyWithValue("node", "loud")))

	body, _ := json.Marshal(map[string]any{"matchers": []map[string]any{{"name": "node", "value": "quiet", "isRegex": false, "isEqual": true}},
		"startsAt": time.Now().UTC(), "endsAt": time.Now().Add(time.Hour).UTC(), "createdBy": "test", "comment": "quiet"})
	resp, err := http.Post(am.URL()+"/api/v2/silences", "application/json", bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	_ = resp.Body.Close()
	g.Expect(am.Fire(ctx, map[string]string{"alertname": "Down", "node": "quiet"}, time.Now().Add(time.Minute))).To(Succeed())
	g.Eventually(func() ([]map[string]string, error) { return am.Suppressed(ctx) }, 30*time.Second, 200*time.Millisecond).
		Should(ContainElement(HaveKeyWithValue("node", "quiet")))
	g.Consistently(recv.Notified, 3*time.Second, 200*time.Millisecond).ShouldNot(ContainElement(HaveKeyWithValue("node", "quiet")))
}
