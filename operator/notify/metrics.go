package notify

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kmaint/kmaint/operator/metrics"
)

// The notifier's metric names.
const (
	EventsMetric     = metrics.NotificationEventsTotal
	SummarizedMetric = metrics.NotificationSummarizedTotal
	MessagesMetric   = metrics.NotificationMessagesTotal
	ReceiversMetric  = metrics.NotificationReceivers
)

// Results of a message's delivery to one receiver.
const (
	resultSent   = "sent"
	resultFailed = "failed"
	// resultSkipped: the receiver was still busy with an earlier message,
	// past the send timeout; the message is dropped for it.
	resultSkipped = "skipped"
)

// Metrics are the notifier's Prometheus metrics.
type Metrics struct {
	events     *prometheus.CounterVec
	summarized prometheus.Counter
	messages   *prometheus.CounterVec
	receivers  *prometheus.GaugeVec
}

// NewMetrics registers the notifier's metrics with reg. When they are
// registered already, as when a test runs several operators in one
// process, the registered ones are shared.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	var m Metrics
	var err error
	if m.events, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: EventsMetric,
		Help: "Events taken for a notification, by reason."}, []string{"reason"})); err != nil {
		return nil, err
	}
	if m.summarized, err = register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: SummarizedMetric,
		Help: "Events counted in a notification's summary instead of a line of their own: the message was full."})); err != nil {
		return nil, err
	}
	if m.messages, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: MessagesMetric,
		Help: "Notification messages by receiver (its position in the URLs file and its service) and result: sent, failed, or skipped (the receiver still hung on an earlier one)."},
		[]string{"receiver", "result"})); err != nil {
		return nil, err
	}
	if m.receivers, err = register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: ReceiversMetric,
		Help: "Notification URLs configured, by state: valid, or invalid (left out; the log says why)."}, []string{"state"})); err != nil {
		return nil, err
	}
	return &m, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			return c, err
		}
		existing, ok := already.ExistingCollector.(C)
		if !ok {
			return c, err
		}
		return existing, nil
	}
	return c, nil
}
