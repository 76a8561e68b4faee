package alertwebhook_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/kmaint/kmaint/operator/alertwebhook"
)

// An alert with absurd times is refused, by a 400 naming the alert and the
// field; the good alert beside it is taken all the same.
func TestHandlerRefusesAbsurdTimes(t *testing.T) {
	now := receivedAt
	year9999 := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		// bad is the alert's JSON, in a payload after a good alert.
		bad string
		// wantBody are parts of the response's line for the bad alert.
		wantBody []string
	}{
		"startsAt in year 9999": {
			bad:      alertJSON("firing", year9999, time.Time{}),
			wantBody: []string{"alerts[1] (alertname \"KernelDeadlock\", fingerprint ", "): startsAt: 9999-01-01T00:00:00Z is in the future, more than 5m0s ahead of the receiver's clock (2026-03-01T10:06:00Z)"},
		},
		"startsAt beyond the clock skew": {
			bad:      alertJSON("firing", now.Add(6*time.Minute), time.Time{}),
			wantBody: []string{"startsAt: 2026-03-01T10:12:00Z is in the future"},
		},
		"startsAt missing": {
			bad:      `{"status":"firing","labels":{"alertname":"KernelDeadlock","node":"bad"}}`,
			wantBody: []string{"startsAt: missing"},
		},
		"startsAt zero": {
			bad:      `{"status":"firing","labels":{"alertname":"KernelDeadlock","node":"bad"},"startsAt":"0001-01-01T00:00:00Z"}`,
			wantBody: []string{"startsAt: missing or zero"},
		},
		"startsAt in 1970": {
			bad:      alertJSON("firing", time.Unix(0, 0), time.Time{}),
			wantBody: []string{"startsAt: 1970-01-01T00:00:00Z is more than a year before the receiver's clock"},
		},
		"startsAt not a time": {
			bad:      `{"status":"firing","labels":{"alertname":"KernelDeadlock","node":"bad"},"startsAt":"yesterday"}`,
			wantBody: []string{`startsAt: "yesterday" is not an RFC 3339 time`},
		},
		"startsAt in year 10000": {
			bad:      `{"status":"firing","labels":{"alertname":"KernelDeadlock","node":"bad"},"startsAt":"10000-01-01T00:00:00Z"}`,
			wantBody: []string{"startsAt: ", "is not an RFC 3339 time"},
		},
		"startsAt a number": {
			bad:      `{"status":"firing","labels":{"alertname":"KernelDeadlock","node":"bad"},"startsAt":1772359200}`,
			wantBody: []string{"startsAt: 1772359200 is not an RFC 3339 time"},
		},
		"endsAt before startsAt": {
			bad:      alertJSON("resolved", t0, t0.Add(-time.Second)),
			wantBody: []string{"endsAt: 2026-03-01T09:59:59Z is before startsAt 2026-03-01T10:00:00Z"},
		},
		"endsAt in year 9999": {
			bad:      alertJSON("firing", t0, year9999),
			wantBody: []string{"endsAt: 9999-01-01T00:00:00Z is more than a year after the receiver's clock"},
		},
		"endsAt not a time": {
			bad:      `{"status":"resolved","labels":{"alertname":"KernelDeadlock","node":"bad"},"startsAt":"2026-03-01T10:00:00Z","endsAt":"soon"}`,
			wantBody: []string{`endsAt: "soon" is not an RFC 3339 time`},
		},
		"alertname with a newline is quoted back": {
			bad:      `{"status":"firing","labels":{"alertname":"Kernel\nDeadlock","node":"bad"}}`,
			wantBody: []string{`(alertname "Kernel\nDeadlock", fingerprint `, "startsAt: missing"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sink := &recordingSink{}
			h := &alertwebhook.Handler{Tokens: staticToken(testToken), Sink: sink, Logger: testr.New(t), Clock: receiverClock()}
			good, err := json.Marshal(firing("n1"))
			if err != nil {
				t.Fatal(err)
			}
			body := `{"version":"4","status":"firing","receiver":"kmaint","alerts":[` + string(good) + `,` + tc.bad + `]}`
			code, resp := serve(h, body)
			if code != http.StatusBadRequest {
				t.Errorf("code = %d, want 400 (body %q)", code, resp)
			}
			if !strings.HasPrefix(resp, "refused 1 of 2 alerts (the other 1 were taken):\nalerts[1]") {
				t.Errorf("body %q does not start with the count and the bad alert", resp)
			}
			for _, part := range tc.wantBody {
				if !strings.Contains(resp, part) {
					t.Errorf("body %q does not contain %q", resp, part)
				}
			}
			batches := sink.batches()
			if len(batches) != 1 || len(batches[0]) != 1 || batches[0][0].Labels["node"] != "n1" {
				t.Errorf("sink got %+v, want the good alert alone", batches)
			}
		})
	}
}

// Times that are fine: what Alertmanager sends, and the edges of the
// bounds.
func TestHandlerTakesSaneTimes(t *testing.T) {
	now := receivedAt
	ttl := alertwebhook.DefaultFiringTTL
	cases := map[string]struct {
		alert string
		// wantFiring and wantUntil are what the sink gets.
		wantFiring bool
		wantUntil  time.Time
	}{
		"firing without endsAt, as Alertmanager sends it": {
			alert: alertJSON("firing", t0, time.Time{}), wantFiring: true, wantUntil: now.Add(ttl),
		},
		"firing with endsAt null": {
			alert:      `{"status":"firing","labels":{"alertname":"KernelDeadlock","node":"n"},"startsAt":"2026-03-01T10:00:00Z","endsAt":null}`,
			wantFiring: true, wantUntil: now.Add(ttl),
		},
		"firing with an endsAt ahead: counts until then": {
			alert: alertJSON("firing", t0, now.Add(5*time.Minute)), wantFiring: true, wantUntil: now.Add(5 * time.Minute),
		},
		"firing with an endsAt beyond the TTL: counts for the TTL": {
			alert: alertJSON("firing", t0, now.Add(30*24*time.Hour)), wantFiring: true, wantUntil: now.Add(ttl),
		},
		"firing with an endsAt passed: ended": {
			alert: alertJSON("firing", t0, now.Add(-time.Second)), wantFiring: false,
		},
		"firing with endsAt now: ended": {
			alert: alertJSON("firing", t0, now), wantFiring: false,
		},
		"resolved": {
			alert: alertJSON("resolved", t0, t1), wantFiring: false,
		},
		"resolved without endsAt: ended": {
			alert: alertJSON("resolved", t0, time.Time{}), wantFiring: false,
		},
		"startsAt within the clock skew": {
			alert: alertJSON("firing", now.Add(alertwebhook.DefaultClockSkew), time.Time{}), wantFiring: true, wantUntil: now.Add(ttl),
		},
		"startsAt almost a year ago": {
			alert: alertJSON("firing", now.Add(-alertwebhook.MaxAlertAge+time.Minute), time.Time{}), wantFiring: true, wantUntil: now.Add(ttl),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sink := &recordingSink{}
			h := &alertwebhook.Handler{Tokens: staticToken(testToken), Sink: sink, Logger: testr.New(t), Clock: receiverClock()}
			code, resp := serve(h, `{"version":"4","alerts":[`+tc.alert+`]}`)
			if code != http.StatusOK {
				t.Fatalf("code = %d, want 200 (body %q)", code, resp)
			}
			b := sink.batches()
			if len(b) != 1 || len(b[0]) != 1 {
				t.Fatalf("sink got %+v, want one alert", b)
			}
			if a := b[0][0]; a.Firing != tc.wantFiring || !a.Until.Equal(tc.wantUntil) {
				t.Errorf("firing %v until %s, want %v until %s", a.Firing, a.Until, tc.wantFiring, tc.wantUntil)
			}
		})
	}
}

// A handler's FiringTTL replaces the default, and is capped at
// MaxFiringTTL.
func TestHandlerFiringTTL(t *testing.T) {
	for ttl, want := range map[time.Duration]time.Duration{
		time.Minute:                       time.Minute,
		30 * 24 * time.Hour:               alertwebhook.MaxFiringTTL,
		alertwebhook.MaxFiringTTL - 1:     alertwebhook.MaxFiringTTL - 1,
		0:                                 alertwebhook.DefaultFiringTTL,
		-time.Hour:                        alertwebhook.DefaultFiringTTL,
		alertwebhook.DefaultFiringTTL:     alertwebhook.DefaultFiringTTL,
		alertwebhook.DefaultFiringTTL * 2: alertwebhook.DefaultFiringTTL * 2,
	} {
		sink := &recordingSink{}
		h := &alertwebhook.Handler{Tokens: staticToken(testToken), Sink: sink, Logger: testr.New(t), Clock: receiverClock(), FiringTTL: ttl}
		if code, resp := serve(h, `{"version":"4","alerts":[`+alertJSON("firing", t0, time.Time{})+`]}`); code != http.StatusOK {
			t.Fatalf("TTL %s: code %d (%s)", ttl, code, resp)
		}
		if got := sink.batches()[0][0].Until; !got.Equal(receivedAt.Add(want)) {
			t.Errorf("TTL %s: until %s, want %s", ttl, got, receivedAt.Add(want))
		}
	}
}

// A payload of many bad alerts gets a short answer: the first ten, and how
// many more.
func TestHandlerRefusalListIsShort(t *testing.T) {
	alerts := make([]string, 25)
	for i := range alerts {
		alerts[i] = alertJSON("firing", time.Time{}, time.Time{})
	}
	h := &alertwebhook.Handler{Tokens: staticToken(testToken), Sink: &recordingSink{}, Logger: testr.New(t), Clock: receiverClock()}
	code, resp := serve(h, `{"version":"4","alerts":[`+strings.Join(alerts, ",")+`]}`)
	if code != http.StatusBadRequest {
		t.Errorf("code = %d, want 400", code)
	}
	lines := strings.Split(resp, "\n")
	if len(lines) != 12 || lines[0] != "refused 25 of 25 alerts (the other 0 were taken):" || lines[11] != "... and 15 more" {
		t.Errorf("body has %d lines, want the count, ten alerts and the rest counted:\n%s", len(lines), resp)
	}
}

// alertJSON is an alert naming node "bad" with the given status and times;
// a zero time is left out.
func alertJSON(status string, startsAt, endsAt time.Time) string {
	a := map[string]any{"status": status, "labels": map[string]string{"alertname": "KernelDeadlock", "node": "bad"}}
	if !startsAt.IsZero() {
		a["startsAt"] = startsAt.UTC().Format(time.RFC3339Nano)
	}
	if !endsAt.IsZero() {
		a["endsAt"] = endsAt.UTC().Format(time.RFC3339Nano)
	}
	b, _ := json.Marshal(a)
	return string(b)
}

// serve posts body to h as Alertmanager would and returns the response's
// code and body, without its final newline.
func serve(h http.Handler, body string) (int, string) {
	req := httptest.NewRequest(http.MethodPost, alertwebhook.AlertsPath, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, strings.TrimSuffix(rec.Body.String(), "\n")
}
