package alertwebhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
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

// Alert is one alert of a webhook payload, reduced to what policies need.
type Alert struct {
	// Labels identify the alert: alertname, the label naming the node, and
	// whatever matchers a policy compares.
	Labels map[string]string
	// Firing is true for a firing alert and false for a resolved one.
	Firing bool
	// StartsAt is when the alert started firing.
	StartsAt time.Time
	// EndsAt is when a resolved alert stopped firing; for a firing alert it
	// is zero or when Alertmanager will consider it resolved unless renewed.
	EndsAt time.Time
}

// decodePayload parses and validates a payload body. Its errors are meant for
// the client, so they say what is wrong with the payload.
func decodePayload(body []byte, maxAlerts int) (*Payload, []Alert, error) {
	var p Payload
	if err := json.Unmarshal(body, &p); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syntax):
			return nil, nil, fmt.Errorf("invalid JSON at byte %d: %v", syntax.Offset, err)
		case errors.As(err, &typ):
			return nil, nil, fmt.Errorf("invalid payload: field %q: %v", typ.Field, err)
		}
		return nil, nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if p.Version != PayloadVersion {
		return nil, nil, fmt.Errorf("unsupported payload version %q, want %q", p.Version, PayloadVersion)
	}
	if len(p.Alerts) > maxAlerts {
		return nil, nil, fmt.Errorf("payload has %d alerts, at most %d are accepted: set max_alerts in the webhook_config", len(p.Alerts), maxAlerts)
	}
	alerts := make([]Alert, 0, len(p.Alerts))
	for i, a := range p.Alerts {
		if len(a.Labels) == 0 {
			return nil, nil, fmt.Errorf("alert %d has no labels", i)
		}
		if a.Status != StatusFiring && a.Status != StatusResolved {
			return nil, nil, fmt.Errorf("alert %d has status %q, want %q or %q", i, a.Status, StatusFiring, StatusResolved)
		}
		alerts = append(alerts, Alert{
			Labels:   a.Labels,
			Firing:   a.Status == StatusFiring,
			StartsAt: a.StartsAt,
			EndsAt:   a.EndsAt,
		})
	}
	return &p, alerts, nil
}
