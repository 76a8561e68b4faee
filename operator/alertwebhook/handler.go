package alertwebhook

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Defaults of Handler's limits.
const (
	DefaultMaxBodyBytes int64 = 1 << 20
	DefaultMaxAlerts          = 1000
)

// DefaultFiringTTL is how long a firing alert counts after it was last
// received, when it names no earlier end. Alertmanager sends a firing alert
// again every repeat_interval (4h by default) while nothing else changes in
// its group, and every group_interval (5m) when something does, so an alert
// that still fires is received again well within 12h: three default repeat
// intervals, so that one or two lost notifications do not drop it. An alert
// whose resolution was lost (or a single old POST) stops counting after it.
// Set the TTL above Alertmanager's repeat_interval.
const DefaultFiringTTL = 12 * time.Hour

// MaxFiringTTL bounds FiringTTL: a record is never trusted for longer than
// a week without news of the alert.
const MaxFiringTTL = 7 * 24 * time.Hour

// maxRefusalsShown caps the refused alerts a response lists, so that a
// payload of a thousand bad alerts gets a short answer.
const maxRefusalsShown = 10

// Sink receives the alerts of each accepted payload. Alertmanager resends a
// whole payload when it is not acknowledged, so Receive must be idempotent:
// receiving the same alerts twice must raise no second request.
type Sink interface {
	Receive(ctx context.Context, alerts []Alert) error
}

// TokenSource gives the bearer token requests must carry.
type TokenSource interface {
	Token(ctx context.Context) (string, error)
}

// Handler serves Alertmanager's webhook: it accepts only POSTs of JSON
// payloads that carry the right bearer token, and answers 200 only after
// Sink has taken the payload's alerts, so that Alertmanager retries
// everything the operator did not act on (503). Alerts it refuses (no
// labels, an unknown status, absurd times) are left out and listed in a
// 400, after the others were taken.
type Handler struct {
	// Tokens gives the token requests must carry. Required: a Handler never
	// accepts a request when it has no token to compare.
	Tokens TokenSource
	// Sink receives the alerts. Required.
	Sink Sink
	// MaxBodyBytes caps a request body; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxAlerts caps the alerts of one payload; 0 means DefaultMaxAlerts.
	MaxAlerts int
	// Logger logs rejections (at V(1)) and failures; unset means the logger
	// of the request's context, which is controller-runtime's global one.
	Logger logr.Logger
	// Metrics counts requests by response code; nil counts nothing.
	Metrics *Metrics
	// FiringTTL is how long a firing alert counts after it was received,
	// unless its endsAt is sooner; 0 means DefaultFiringTTL.
	FiringTTL time.Duration
	// ClockSkew is how far ahead of Clock an alert's startsAt may be; 0
	// means DefaultClockSkew.
	ClockSkew time.Duration
	// Clock is the receiver's clock, against which alerts' times are
	// checked; nil means the real clock.
	Clock clock.PassiveClock
}

var _ http.Handler = (*Handler)(nil)

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	logger := h.Logger
	if logger.GetSink() == nil {
		logger = log.FromContext(r.Context())
	}
	logger = logger.WithValues("remote", r.RemoteAddr)
	reject := func(code int, reason string) {
		logger.V(1).Info("Rejected alert webhook request", "code", code, "reason", reason)
		h.reply(w, code, reason)
	}

	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reject(http.StatusMethodNotAllowed, "method "+r.Method+" not allowed, use POST")
		return
	}

	if h.Tokens == nil || h.Sink == nil {
		logger.Error(nil, "Alert webhook has no token source or no sink; refusing every request")
		h.reply(w, http.StatusServiceUnavailable, "webhook not configured")
		return
	}

	// A request without a token is refused before the token is read, so
	// anonymous callers cost no API call.
	presented, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="kmaint"`)
		reject(http.StatusUnauthorized, "a bearer token is required")
		return
	}
	want, err := h.Tokens.Token(r.Context())
	if err == nil && want == "" {
		err = errors.New("token source gave an empty token")
	}
	if err != nil {
		// Not the client's fault, and never a reason to let it in: 503 makes
		// Alertmanager retry once the Secret is fixed.
		logger.Error(err, "Cannot read the alert webhook token; refusing requests until it can be read")
		h.reply(w, http.StatusServiceUnavailable, "webhook token unavailable")
		return
	}
	if !tokensEqual(presented, want) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="kmaint", error="invalid_token"`)
		reject(http.StatusUnauthorized, "invalid bearer token")
		return
	}

	if !isJSON(r.Header.Get("Content-Type")) {
		reject(http.StatusUnsupportedMediaType, "content type must be application/json")
		return
	}

	maxBody := h.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = DefaultMaxBodyBytes
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			reject(http.StatusRequestEntityTooLarge, "body larger than "+strconv.FormatInt(tooLarge.Limit, 10)+" bytes")
			return
		}
		reject(http.StatusBadRequest, "read body: "+err.Error())
		return
	}

	maxAlerts := h.MaxAlerts
	if maxAlerts <= 0 {
		maxAlerts = DefaultMaxAlerts
	}
	payload, alerts, refused, err := decodePayload(body, maxAlerts, h.timeRules())
	if err != nil {
		reject(http.StatusBadRequest, err.Error())
		return
	}
	if payload.TruncatedAlerts > 0 {
		// Alertmanager dropped alerts to honour max_alerts; nodes they name
		// are never seen until a later notification carries them.
		logger.Info("Alertmanager truncated a notification; raise max_alerts in its webhook_config",
			"receiver", payload.Receiver, "truncated", payload.TruncatedAlerts)
	}
	// Alertmanager never sends a payload without alerts; one is acknowledged
	// without bothering the sink.
	if len(alerts) > 0 {
		if err := h.Sink.Receive(r.Context(), alerts); err != nil {
			logger.Error(err, "Alert sink failed; Alertmanager will retry", "receiver", payload.Receiver, "alerts", len(alerts))
			h.reply(w, http.StatusServiceUnavailable, "alerts not taken, retry")
			return
		}
	}
	if len(refused) > 0 {
		// The good alerts are taken, the bad ones refused, and the answer
		// is 400 so that the sender (Alertmanager logs the body) learns of
		// them; Alertmanager does not retry a 4xx, and sends the group
		// again at its next group_interval, when the good alerts are taken
		// again, to no effect.
		logger.Info("Refused alerts of a webhook payload", "receiver", payload.Receiver,
			"refused", len(refused), "taken", len(alerts), "first", refused[0].Error())
		h.reply(w, http.StatusBadRequest, refusalMessage(refused, len(alerts)))
		return
	}
	h.reply(w, http.StatusOK, "ok")
}

// timeRules are the bounds of alerts' times for a request received now.
func (h *Handler) timeRules() timeRules {
	clk := h.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	r := timeRules{now: clk.Now(), skew: h.ClockSkew, ttl: h.FiringTTL}
	if r.skew <= 0 {
		r.skew = DefaultClockSkew
	}
	if r.ttl <= 0 {
		r.ttl = DefaultFiringTTL
	}
	r.ttl = min(r.ttl, MaxFiringTTL)
	return r
}

// refusalMessage lists the refused alerts, one a line, the first
// maxRefusalsShown of them.
func refusalMessage(refused []*AlertError, taken int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "refused %d of %d alerts (the other %d were taken):", len(refused), len(refused)+taken, taken)
	for i, e := range refused {
		if i == maxRefusalsShown {
			fmt.Fprintf(&b, "\n... and %d more", len(refused)-i)
			break
		}
		b.WriteString("\n" + e.Error())
	}
	return b.String()
}

// reply writes a short plain-text response and counts it.
func (h *Handler) reply(w http.ResponseWriter, code int, msg string) {
	h.Metrics.observe(code)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg+"\n")
}

// bearerToken returns the token of an Authorization header of the Bearer
// scheme, whose name is case-insensitive (RFC 7235).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// tokensEqual compares in constant time. Hashing first makes the comparison
// independent of the tokens' lengths too, which subtle.ConstantTimeCompare
// alone would leak.
func tokensEqual(presented, want string) bool {
	a, b := sha256.Sum256([]byte(presented)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// isJSON accepts application/json and any +json type, with any parameters
// (charset ...), in any case.
func isJSON(contentType string) bool {
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mediaType == "application/json" || (strings.HasPrefix(mediaType, "application/") && strings.HasSuffix(mediaType, "+json"))
}
