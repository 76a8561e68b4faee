package alertwebhook

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// responseCodes are every code Handler answers with, so the code label stays
// bounded and each series exists from the start.
var responseCodes = []int{
	http.StatusOK,
	http.StatusBadRequest,
	http.StatusUnauthorized,
	http.StatusMethodNotAllowed,
	http.StatusRequestEntityTooLarge,
	http.StatusUnsupportedMediaType,
	http.StatusServiceUnavailable,
}

// Metrics are the webhook's Prometheus metrics.
type Metrics struct {
	requests *prometheus.CounterVec
}

// NewMetrics registers the webhook's metrics with reg (controller-runtime's
// metrics.Registry in the operator). When they are registered already, as
// when a test runs several operators in one process, the registered ones
// are shared.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kmaint_alert_webhook_requests_total",
		Help: "Alertmanager webhook requests, by HTTP response code.",
	}, []string{"code"})
	if err := reg.Register(requests); err != nil {
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			return nil, err
		}
		existing, ok := already.ExistingCollector.(*prometheus.CounterVec)
		if !ok {
			return nil, err
		}
		requests = existing
	}
	for _, code := range responseCodes {
		requests.WithLabelValues(strconv.Itoa(code))
	}
	return &Metrics{requests: requests}, nil
}

// observe counts a response; a nil *Metrics counts nothing.
func (m *Metrics) observe(code int) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(strconv.Itoa(code)).Inc()
}
