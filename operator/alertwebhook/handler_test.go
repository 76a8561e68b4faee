package alertwebhook_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kmaint/kmaint/operator/alertwebhook"
)

func TestHandlerResponses(t *testing.T) {
	valid := payload(t, firing("n1"), resolved("n2"))
	cases := map[string]struct {
		method      string // "" is POST
		contentType string // "" is application/json; "-" sends none
		auth        string // "" is the right bearer token; "-" sends none
		body        []byte
		maxBody     int64
		maxAlerts   int
		sinkErr     error
		tokens      alertwebhook.TokenSource // nil gives testToken
		// wantCode is the response's status code.
		wantCode int
		// wantBatches is how many times the sink is called.
		wantBatches int
		// wantBody is a part of the response body.
		wantBody string
		// wantHeader are response headers and their values.
		wantHeader map[string]string
	}{
		"valid payload": {body: valid, wantCode: 200, wantBatches: 1},
		"content type with charset": {
			contentType: "application/json; charset=utf-8", body: valid, wantCode: 200, wantBatches: 1,
		},
		"content type in capitals": {contentType: "Application/JSON", body: valid, wantCode: 200, wantBatches: 1},
		"json suffix type":         {contentType: "application/vnd.alertmanager+json", body: valid, wantCode: 200, wantBatches: 1},
		"lowercase scheme":         {auth: "bearer " + testToken, body: valid, wantCode: 200, wantBatches: 1},
		"unknown fields": {
			body:     []byte(`{"version":"4","status":"firing","future":{"x":1},"alerts":[{"status":"firing","labels":{"node":"n1"},"startsAt":"2026-03-01T10:00:00Z","newField":true}]}`),
			wantCode: 200, wantBatches: 1,
		},
		"no alerts": {body: payload(t), wantCode: 200, wantBatches: 0},

		"GET": {
			method: http.MethodGet, wantCode: 405, wantBody: "POST",
			wantHeader: map[string]string{"Allow": "POST"},
		},
		"PUT": {method: http.MethodPut, body: valid, wantCode: 405, wantHeader: map[string]string{"Allow": "POST"}},

		"no token": {
			auth: "-", body: valid, wantCode: 401,
			wantHeader: map[string]string{"WWW-Authenticate": `Bearer realm="kmaint"`},
		},
		"wrong token": {
			auth: "Bearer nope", body: valid, wantCode: 401,
			wantHeader: map[string]string{"WWW-Authenticate": `Bearer realm="kmaint", error="invalid_token"`},
		},
		"token with a suffix":  {auth: "Bearer " + testToken + "x", body: valid, wantCode: 401},
		"token prefix":         {auth: "Bearer " + testToken[:4], body: valid, wantCode: 401},
		"empty bearer":         {auth: "Bearer ", body: valid, wantCode: 401},
		"basic scheme":         {auth: "Basic " + testToken, body: valid, wantCode: 401},
		"token without scheme": {auth: testToken, body: valid, wantCode: 401},

		"token source fails": {
			tokens: tokenFunc(func(context.Context) (string, error) { return "", errors.New("secret not found") }),
			body:   valid, wantCode: 503,
		},
		"token source gives empty token": {
			// An empty configured token must not let an empty bearer in.
			auth: "Bearer ", tokens: staticToken(""), body: valid, wantCode: 401,
		},
		"token source gives empty token to a request with a token": {
			auth: "Bearer x", tokens: staticToken(""), body: valid, wantCode: 503,
		},

		"form content type": {contentType: "application/x-www-form-urlencoded", body: valid, wantCode: 415},
		"text content type": {contentType: "text/plain", body: valid, wantCode: 415},
		"no content type":   {contentType: "-", body: valid, wantCode: 415},

		"body too large":    {body: valid, maxBody: int64(len(valid) - 1), wantCode: 413},
		"body at the limit": {body: valid, maxBody: int64(len(valid)), wantCode: 200, wantBatches: 1},

		"malformed JSON":     {body: []byte(`{"version":"4","alerts":[`), wantCode: 400, wantBody: "invalid JSON"},
		"not an object":      {body: []byte(`[1,2]`), wantCode: 400, wantBody: "invalid payload"},
		"trailing garbage":   {body: append(append([]byte{}, valid...), []byte(`{}`)...), wantCode: 400},
		"empty body":         {body: nil, wantCode: 400},
		"wrong version":      {body: bytes.Replace(valid, []byte(`"version":"4"`), []byte(`"version":"5"`), 1), wantCode: 400, wantBody: `version "5"`},
		"no version":         {body: []byte(`{"alerts":[{"status":"firing","labels":{"node":"n1"}}]}`), wantCode: 400, wantBody: "version"},
		"too many alerts":    {body: payload(t, firing("a"), firing("b"), firing("c")), maxAlerts: 2, wantCode: 400, wantBody: "3 alerts"},
		"as many as allowed": {body: payload(t, firing("a"), firing("b")), maxAlerts: 2, wantCode: 200, wantBatches: 1},
		// A bad alert is refused on its own: the others are taken, and
		// the answer, 400, names the bad one.
		"alert without labels": {
			body: payload(t, firing("a"), alertwebhook.PayloadAlert{Status: "firing", StartsAt: t0}), wantCode: 400, wantBatches: 1,
			wantBody: "refused 1 of 2 alerts (the other 1 were taken):\nalerts[1]: labels: no labels",
		},
		"alert with unknown status": {
			body:     payload(t, alertwebhook.PayloadAlert{Status: "pending", Labels: map[string]string{"node": "n1"}, StartsAt: t0}),
			wantCode: 400, wantBody: `alerts[0] (alertname "", fingerprint `,
		},
		"alert without status": {
			body: payload(t, alertwebhook.PayloadAlert{Labels: map[string]string{"node": "n1"}, StartsAt: t0}), wantCode: 400, wantBody: `: status: "", want "firing" or "resolved"`,
		},
		"labels of the wrong type": {
			body:     []byte(`{"version":"4","alerts":[{"status":"firing","labels":{"node":1}}]}`),
			wantCode: 400, wantBody: "alerts[0]: labels: not an object of string values",
		},
		"alert not an object": {
			body: []byte(`{"version":"4","alerts":[7]}`), wantCode: 400, wantBody: "alerts[0]: alert: not a JSON object",
		},
		"alerts not a list": {
			body: []byte(`{"version":"4","alerts":{}}`), wantCode: 400, wantBody: `field "alerts"`,
		},

		"sink fails": {body: valid, sinkErr: errors.New("API server down"), wantCode: 503, wantBatches: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sink := &recordingSink{err: tc.sinkErr}
			tokens := tc.tokens
			if tokens == nil {
				tokens = staticToken(testToken)
			}
			h := &alertwebhook.Handler{
				Tokens: tokens, Sink: sink, MaxBodyBytes: tc.maxBody, MaxAlerts: tc.maxAlerts,
				Logger: testr.NewWithOptions(t, testr.Options{Verbosity: 1}), Clock: receiverClock(),
			}
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			req := httptest.NewRequest(method, "/alerts", bytes.NewReader(tc.body))
			switch tc.contentType {
			case "":
				req.Header.Set("Content-Type", "application/json")
			case "-":
			default:
				req.Header.Set("Content-Type", tc.contentType)
			}
			switch tc.auth {
			case "":
				req.Header.Set("Authorization", "Bearer "+testToken)
			case "-":
			default:
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)

			if rec.Code != tc.wantCode {
				t.Errorf("code = %d, want %d (body %q)", rec.Code, tc.wantCode, rec.Body.String())
			}
			if got := len(sink.batches()); got != tc.wantBatches {
				t.Errorf("sink called %d times, want %d", got, tc.wantBatches)
			}
			if !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Errorf("body %q does not contain %q", rec.Body.String(), tc.wantBody)
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				t.Errorf("response content type = %q, want text/plain", ct)
			}
			for k, v := range tc.wantHeader {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestHandlerPassesAlerts(t *testing.T) {
	sink := &recordingSink{}
	h := &alertwebhook.Handler{Tokens: staticToken(testToken), Sink: sink, Logger: testr.New(t), Clock: receiverClock()}
	req := httptest.NewRequest(http.MethodPost, "/alerts", bytes.NewReader(payload(t, firing("n1"), resolved("n2"))))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("code = %d, want 200 (body %q)", rec.Code, rec.Body.String())
	}
	want := [][]alertwebhook.Alert{{
		{
			Labels: map[string]string{"alertname": "KernelDeadlock", "node": "n1", "severity": "critical"},
			// Alertmanager's own fingerprint of these labels.
			Fingerprint: fingerprintOf(map[string]string{"alertname": "KernelDeadlock", "node": "n1", "severity": "critical"}),
			Firing:      true,
			StartsAt:    t0,
			Until:       receivedAt.Add(alertwebhook.DefaultFiringTTL),
		},
		{
			Labels:      map[string]string{"alertname": "KernelDeadlock", "node": "n2", "severity": "critical"},
			Fingerprint: fingerprintOf(map[string]string{"alertname": "KernelDeadlock", "node": "n2", "severity": "critical"}),
			Firing:      false,
			StartsAt:    t0,
			EndsAt:      t1,
		},
	}}
	got := sink.batches()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sink got %+v, want %+v", got, want)
	}
}

// The default body limit is 1 MiB: a payload just under it passes, one just
// over it does not.
func TestHandlerDefaultBodyLimit(t *testing.T) {
	big := firing("n1")
	for name, size := range map[string]int{"under": 1<<20 - 1024, "over": 1<<20 + 1} {
		t.Run(name, func(t *testing.T) {
			a := big
			a.Annotations = map[string]string{"description": ""}
			body := payload(t, a)
			a.Annotations["description"] = strings.Repeat("x", size-len(body))
			body = payload(t, a)
			if len(body) != size {
				t.Fatalf("built a body of %d bytes, want %d", len(body), size)
			}
			sink := &recordingSink{}
			h := &alertwebhook.Handler{Tokens: staticToken(testToken), Sink: sink, Logger: testr.New(t), Clock: receiverClock()}
			req := httptest.NewRequest(http.MethodPost, "/alerts", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+testToken)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			wantCode, wantBatches := 200, 1
			if name == "over" {
				wantCode, wantBatches = 413, 0
			}
			if rec.Code != wantCode || len(sink.batches()) != wantBatches {
				t.Errorf("code %d and %d sink calls, want %d and %d", rec.Code, len(sink.batches()), wantCode, wantBatches)
			}
		})
	}
}

// A handler missing its token source or its sink refuses everything rather
// than accepting alerts it cannot check or act on.
func TestHandlerUnconfigured(t *testing.T) {
	for name, h := range map[string]*alertwebhook.Handler{
		"no token source": {Sink: &recordingSink{}},
		"no sink":         {Tokens: staticToken(testToken)},
	} {
		t.Run(name, func(t *testing.T) {
			h.Logger = testr.New(t)
			req := httptest.NewRequest(http.MethodPost, "/alerts", bytes.NewReader(payload(t, firing("n1"))))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+testToken)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusServiceUnavailable {
				t.Errorf("code = %d, want 503", rec.Code)
			}
		})
	}
}

func TestHandlerMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := alertwebhook.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	// A second operator in the same process shares the counters.
	m2, err := alertwebhook.NewMetrics(reg)
	if err != nil {
		t.Fatalf("second registration: %v", err)
	}
	h := &alertwebhook.Handler{Tokens: staticToken(testToken), Sink: &recordingSink{}, Metrics: m, Logger: testr.New(t), Clock: receiverClock()}
	h2 := &alertwebhook.Handler{Tokens: staticToken(testToken), Sink: &recordingSink{}, Metrics: m2, Logger: testr.New(t), Clock: receiverClock()}
	send := func(h http.Handler, auth string) {
		req := httptest.NewRequest(http.MethodPost, "/alerts", bytes.NewReader(payload(t, firing("n1"))))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", auth)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	send(h, "Bearer "+testToken)
	send(h, "Bearer wrong")
	send(h2, "Bearer wrong")

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "kmaint_alert_webhook_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{"200": 1, "401": 2, "400": 0, "405": 0, "413": 0, "415": 0, "503": 0}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("requests by code = %v, want %v", got, want)
	}
}
