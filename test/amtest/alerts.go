package amtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Fire sends Alertmanager one alert with these labels, firing until
// endsAt, as Prometheus would.
func (s *Server) Fire(ctx context.Context, labels map[string]string, endsAt time.Time) error {
	body, err := json.Marshal([]map[string]any{{"labels": labels, "startsAt": time.Now().UTC(), "endsAt": endsAt.UTC()}})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/api/v2/alerts", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("post alert: %d %s", resp.StatusCode, b)
	}
	return nil
}

// Suppressed lists the labels of the alerts Alertmanager holds that a
// silence suppresses.
func (s *Server) Suppressed(ctx context.Context) ([]map[string]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/api/v2/alerts?active=false&silenced=true&inhibited=false&unprocessed=false", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var alerts []struct {
		Labels map[string]string `json:"labels"`
		Status struct {
			SilencedBy []string `json:"silencedBy"`
		} `json:"status"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&alerts); err != nil {
		return nil, err
	}
	var out []map[string]string
	for _, a := range alerts {
		if len(a.Status.SilencedBy) > 0 {
			out = append(out, a.Labels)
		}
	}
	return out, nil
}

// Receiver is a webhook that records the alerts Alertmanager notifies.
type Receiver struct {
	srv    *http.Server
	addr   string
	mu     sync.Mutex
	alerts []map[string]string
}

// NewReceiver starts a receiver on a free port of 127.0.0.1 for the test.
func NewReceiver(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{}
	ln, err := listenLocal()
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	t.Cleanup(func() { _ = r.srv.Close() })
	return r
}

// URL is where Alertmanager sends.
func (r *Receiver) URL() string { return "http://" + r.addr + "/alerts" }

// Notified returns the labels of every alert notified so far.
func (r *Receiver) Notified() []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]string(nil), r.alerts...)
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	var msg struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
		} `json:"alerts"`
	}
	if err := json.NewDecoder(io.LimitReader(req.Body, 8<<20)).Decode(&msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, a := range msg.Alerts {
		r.alerts = append(r.alerts, a.Labels)
	}
	r.mu.Unlock()
}

func listenLocal() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
