package daemon

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kmaint/kmaint/operator/api/protocol"
)

// metrics are the daemon's Prometheus metrics. Labels stay bounded: a source
// or a state, never a request id.
type metrics struct {
	requests    *prometheus.CounterVec
	reboots     prometheus.Counter
	state       *prometheus.GaugeVec
	outstanding prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kmaint_daemon_requests_total",
			Help: "Reboot requests journaled in this node's current boot, by source, as the daemon read them.",
		}, []string{"source"}),
		reboots: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kmaint_daemon_reboots_total",
			Help: "Reboots this daemon asked for.",
		}),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kmaint_daemon_state",
			Help: "1 for the daemon's current state (idle, requested, rebooting, degraded), 0 for the others.",
		}, []string{"state"}),
		outstanding: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kmaint_daemon_outstanding_requests",
			Help: "Reboot requests of the current boot not yet satisfied.",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.reboots, m.state, m.outstanding} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) setState(phase protocol.DaemonPhase, outstanding int) {
	for _, p := range []protocol.DaemonPhase{protocol.DaemonIdle, protocol.DaemonRequested, protocol.DaemonRebooting, protocol.DaemonDegraded} {
		v := 0.0
		if p == phase {
			v = 1
		}
		m.state.WithLabelValues(string(p)).Set(v)
	}
	m.outstanding.Set(float64(outstanding))
}
