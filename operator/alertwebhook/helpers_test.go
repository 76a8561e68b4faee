package alertwebhook_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kmaint/kmaint/operator/alertwebhook"
)

const testToken = "s3cret-token"

// recordingSink keeps every batch it receives and fails with err when set.
type recordingSink struct {
	mu    sync.Mutex
	calls [][]alertwebhook.Alert
	err   error
}

func (s *recordingSink) Receive(_ context.Context, alerts []alertwebhook.Alert) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, alerts)
	return s.err
}

func (s *recordingSink) batches() [][]alertwebhook.Alert {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]alertwebhook.Alert(nil), s.calls...)
}

// tokenFunc adapts a function to alertwebhook.TokenSource.
type tokenFunc func(ctx context.Context) (string, error)

func (f tokenFunc) Token(ctx context.Context) (string, error) { return f(ctx) }

func staticToken(token string) alertwebhook.TokenSource {
	return tokenFunc(func(context.Context) (string, error) { return token, nil })
}

// The times of the test alerts: t0 they started, t1 the resolved ones
// ended, receivedAt the receiver's clock reads when they come in.
var (
	t0         = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	t1         = t0.Add(5 * time.Minute)
	receivedAt = t1.Add(time.Minute)
)

// receiverClock is the receiver's clock, at receivedAt.
func receiverClock() *testingclock.FakeClock { return testingclock.NewFakeClock(receivedAt) }

// fingerprintOf is Alertmanager's fingerprint of the labels.
func fingerprintOf(labels map[string]string) string {
	set := model.LabelSet{}
	for k, v := range labels {
		set[model.LabelName(k)] = model.LabelValue(v)
	}
	return set.Fingerprint().String()
}

func firing(node string) alertwebhook.PayloadAlert {
	return alertwebhook.PayloadAlert{
		Status:      alertwebhook.StatusFiring,
		Labels:      map[string]string{"alertname": "KernelDeadlock", "node": node, "severity": "critical"},
		Annotations: map[string]string{"summary": "kernel deadlock on " + node},
		StartsAt:    t0,
		// Alertmanager sends the zero time for alerts without an end.
		Fingerprint: "f-" + node,
	}
}

func resolved(node string) alertwebhook.PayloadAlert {
	a := firing(node)
	a.Status = alertwebhook.StatusResolved
	a.EndsAt = t1
	return a
}

// payload is a version 4 payload as Alertmanager sends it.
func payload(t testing.TB, alerts ...alertwebhook.PayloadAlert) []byte {
	t.Helper()
	b, err := json.Marshal(alertwebhook.Payload{
		Version:      "4",
		GroupKey:     `{}:{alertname="KernelDeadlock"}`,
		Status:       alertwebhook.StatusFiring,
		Receiver:     "kmaint",
		GroupLabels:  map[string]string{"alertname": "KernelDeadlock"},
		CommonLabels: map[string]string{"alertname": "KernelDeadlock"},
		ExternalURL:  "http://alertmanager:9093",
		Alerts:       alerts,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
