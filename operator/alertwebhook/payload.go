package alertwebhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/common/model"
)

// PayloadVersion is the webhook payload version Handler accepts, the one
// Alertmanager sends. A new version may change the meaning of fields, so any
// other is refused rather than guessed at.
const PayloadVersion = "4"

// The alert statuses Alertmanager sends.
const (
	StatusFiring   = "firing"
	StatusResolved = "resolved"
)

// Payload is the body of an Alertmanager webhook notification, as documented
// for webhook_config. It is defined here rather than imported so that the
// operator does not depend on Alertmanager itself. Fields Alertmanager adds
// later are ignored when decoding.
type Payload struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   uint64            `json:"truncatedAlerts"`
	Status            string            `json:"status"`
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Alerts            []PayloadAlert    `json:"alerts"`
}

// PayloadAlert is one alert of a Payload.
type PayloadAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// Alert is one alert of a webhook payload, checked and reduced to what
// policies need.
type Alert struct {
	// Labels identify the alert: alertname, the label naming the node, and
	// whatever matchers a policy compares.
	Labels map[string]string
	// Fingerprint identifies the alert by its labels. It is computed here,
	// as Alertmanager computes its own (the same value), rather than taken
	// from the payload.
	Fingerprint string
	// Firing is true for an alert that fires when it is received: status
	// firing, and no endsAt or one still ahead. A firing alert whose endsAt
	// has passed has ended, as a resolved one has.
	Firing bool
	// StartsAt is when the alert started firing. With the fingerprint it
	// names one episode of the alert: a new firing after a resolution has a
	// new startsAt.
	StartsAt time.Time
	// EndsAt is when the alert stopped firing, or zero. Alertmanager sends
	// it for resolved alerts only; other senders may give a firing alert an
	// end ahead.
	EndsAt time.Time
	// Until is, for a firing alert, when its firing record expires unless
	// the alert is received again: its endsAt when it has one, and at most
	// the Handler's FiringTTL after it was received. Zero for an ended
	// alert.
	Until time.Time
}

// Bounds on the times of an alert, against the receiver's clock.
const (
	// DefaultClockSkew is how far ahead of the receiver's clock an alert's
	// startsAt may be: the clocks of Prometheus, Alertmanager and the
	// operator differ a little, never by minutes on a healthy cluster.
	DefaultClockSkew = 5 * time.Minute
	// MaxAlertAge is how long ago an alert's startsAt may be, and how far
	// ahead its endsAt. An alert firing for longer than a year, or set to
	// end years from now, is a sender's mistake (a zero or made-up time),
	// not something to reboot a node for.
	MaxAlertAge = 365 * 24 * time.Hour
)

// timeRules are what an alert's times are checked against.
type timeRules struct {
	now  time.Time
	skew time.Duration
	ttl  time.Duration
}

// AlertError says why one alert of a payload was refused. Its message names
// the alert (its index, alertname and fingerprint) and the field.
type AlertError struct {
	// Index is the alert's position in the payload's alerts.
	Index int
	// AlertName and Fingerprint name the alert, when its labels could be
	// read.
	AlertName, Fingerprint string
	// Field is the alert's field at fault, e.g. "startsAt".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

func (e *AlertError) Error() string {
	who := fmt.Sprintf("alerts[%d]", e.Index)
	if e.Fingerprint != "" {
		who += fmt.Sprintf(" (alertname %q, fingerprint %s)", clip(e.AlertName, 64), e.Fingerprint)
	}
	return fmt.Sprintf("%s: %s: %s", who, e.Field, e.Reason)
}

// envelope is a payload with its alerts left undecoded, so that one bad
// alert is refused on its own and the others are taken.
type envelope struct {
	Version         string            `json:"version"`
	TruncatedAlerts uint64            `json:"truncatedAlerts"`
	Receiver        string            `json:"receiver"`
	Alerts          []json.RawMessage `json:"alerts"`
}

// wireAlert is an alert as sent, its times undecoded so that a time that
// cannot be read is refused naming its field.
type wireAlert struct {
	Status   string          `json:"status"`
	Labels   json.RawMessage `json:"labels"`
	StartsAt json.RawMessage `json:"startsAt"`
	EndsAt   json.RawMessage `json:"endsAt"`
}

// decodePayload parses a payload body and checks each alert. An error is a
// payload that cannot be used at all (not JSON, another version, too many
// alerts); refused are the alerts that cannot be used, each on its own, and
// alerts the others. Every message is meant for the client, so it says what
// is wrong with the payload.
func decodePayload(body []byte, maxAlerts int, rules timeRules) (p *envelope, alerts []Alert, refused []*AlertError, err error) {
	p = &envelope{}
	if err := json.Unmarshal(body, p); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syntax):
			return nil, nil, nil, fmt.Errorf("invalid JSON at byte %d: %v", syntax.Offset, err)
		case errors.As(err, &typ):
			return nil, nil, nil, fmt.Errorf("invalid payload: field %q: %v", typ.Field, err)
		}
		return nil, nil, nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if p.Version != PayloadVersion {
		return nil, nil, nil, fmt.Errorf("unsupported payload version %q, want %q", clip(p.Version, 32), PayloadVersion)
	}
	if len(p.Alerts) > maxAlerts {
		return nil, nil, nil, fmt.Errorf("payload has %d alerts, at most %d are accepted: set max_alerts in the webhook_config", len(p.Alerts), maxAlerts)
	}
	alerts = make([]Alert, 0, len(p.Alerts))
	for i, raw := range p.Alerts {
		a, err := decodeAlert(raw, rules)
		if err != nil {
			err.Index = i
			refused = append(refused, err)
			continue
		}
		alerts = append(alerts, a)
	}
	return p, alerts, refused, nil
}

// decodeAlert reads and checks one alert.
func decodeAlert(raw json.RawMessage, rules timeRules) (Alert, *AlertError) {
	var w wireAlert
	if err := json.Unmarshal(raw, &w); err != nil {
		return Alert{}, &AlertError{Field: "alert", Reason: "not a JSON object of an alert: " + err.Error()}
	}
	var labels map[string]string
	if err := json.Unmarshal(orNull(w.Labels), &labels); err != nil {
		return Alert{}, &AlertError{Field: "labels", Reason: "not an object of string values: " + err.Error()}
	}
	if len(labels) == 0 {
		return Alert{}, &AlertError{Field: "labels", Reason: "no labels: an alert is named by its labels"}
	}
	a := Alert{Labels: labels, Fingerprint: fingerprint(labels)}
	refuse := func(field, reason string) (Alert, *AlertError) {
		return Alert{}, &AlertError{AlertName: labels["alertname"], Fingerprint: a.Fingerprint, Field: field, Reason: reason}
	}
	if w.Status != StatusFiring && w.Status != StatusResolved {
		return refuse("status", fmt.Sprintf("%q, want %q or %q", clip(w.Status, 32), StatusFiring, StatusResolved))
	}
	if err := a.StartsAt.UnmarshalJSON(orNull(w.StartsAt)); err != nil {
		return refuse("startsAt", fmt.Sprintf("%s is not an RFC 3339 time", clip(string(w.StartsAt), 40)))
	}
	if err := a.EndsAt.UnmarshalJSON(orNull(w.EndsAt)); err != nil {
		return refuse("endsAt", fmt.Sprintf("%s is not an RFC 3339 time", clip(string(w.EndsAt), 40)))
	}
	if field, reason := rules.check(a.StartsAt, a.EndsAt); field != "" {
		return refuse(field, reason)
	}
	a.Firing = w.Status == StatusFiring && (a.EndsAt.IsZero() || a.EndsAt.After(rules.now))
	if a.Firing {
		a.Until = rules.now.Add(rules.ttl)
		if !a.EndsAt.IsZero() && a.EndsAt.Before(a.Until) {
			a.Until = a.EndsAt
		}
	}
	return a, nil
}

// check returns the field and why, when an alert's times are absurd: no
// start, a start ahead of the receiver's clock beyond the skew allowed or
// more than MaxAlertAge ago, an end before the start or more than
// MaxAlertAge ahead. A zero endsAt is what Alertmanager sends for a firing
// alert; on a resolved alert it means it ended when it was received.
func (r timeRules) check(startsAt, endsAt time.Time) (field, reason string) {
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	clock := at(r.now)
	switch {
	case startsAt.IsZero():
		return "startsAt", "missing or zero: an alert has a start"
	case startsAt.After(r.now.Add(r.skew)):
		return "startsAt", fmt.Sprintf("%s is in the future, more than %s ahead of the receiver's clock (%s)", at(startsAt), r.skew, clock)
	case startsAt.Before(r.now.Add(-MaxAlertAge)):
		return "startsAt", fmt.Sprintf("%s is more than a year before the receiver's clock (%s)", at(startsAt), clock)
	case endsAt.IsZero():
		return "", ""
	case endsAt.Before(startsAt):
		return "endsAt", fmt.Sprintf("%s is before startsAt %s", at(endsAt), at(startsAt))
	case endsAt.After(r.now.Add(MaxAlertAge)):
		return "endsAt", fmt.Sprintf("%s is more than a year after the receiver's clock (%s)", at(endsAt), clock)
	}
	return "", ""
}

// fingerprint is Alertmanager's fingerprint of an alert's labels.
func fingerprint(labels map[string]string) string {
	set := make(model.LabelSet, len(labels))
	for k, v := range labels {
		set[model.LabelName(k)] = model.LabelValue(v)
	}
	return set.Fingerprint().String()
}

// orNull reads a missing field as JSON null, which decodes to the zero
// value.
func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// clip shortens what a client sent before it is quoted back.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
