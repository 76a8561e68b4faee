package daemon

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// metrics are the daemon's Prometheus metrics. Labels stay bounded: a source
// or a state, never a request id.
type metrics struct {
	requests *prometheus.CounterVec
	reboots  prometheus.Counter
	// refusedApprovals counts approvals of this boot that no admission of
	// it covered: written by someone other than the gate.
	refusedApprovals prometheus.Counter
	state            *prometheus.GaugeVec
	outstanding      prometheus.Gauge
	bootTime         prometheus.Gauge
	volatile         prometheus.Gauge
	sentinel         *prometheus.GaugeVec
}

// newMetrics registers the daemon's metrics, each labelled with its node so
// that dashboards and alerts can tell nodes apart however Prometheus
// scrapes them (PodMonitor relabelling or not).
func newMetrics(reg prometheus.Registerer, node string, bootTime time.Time) (*metrics, error) {
	reg = prometheus.WrapRegistererWith(prometheus.Labels{"node": node}, reg)
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kmaint_daemon_requests_total",
			Help: "Reboot requests journaled in this node's current boot, by source, as the daemon read them.",
		}, []string{"source"}),
		reboots: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kmaint_daemon_reboots_total",
			Help: "Reboots this daemon asked for.",
		}),
		refusedApprovals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kmaint_daemon_refused_approvals_total",
			Help: "Approvals of this node's boot that no admission of the boot covered, so not the gate's: refused, the node not rebooted.",
		}),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kmaint_daemon_state",
			Help: "1 for the daemon's current state (idle, requested, rebooting, degraded), 0 for the others.",
		}, []string{"state"}),
		outstanding: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kmaint_daemon_outstanding_requests",
			Help: "Reboot requests of the current boot not yet satisfied.",
		}),
		bootTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kmaint_daemon_boot_time_seconds",
			Help: "When the node's current boot began, in seconds since the epoch.",
		}),
		volatile: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kmaint_daemon_journal_volatile",
			Help: "1 when the node's journal holds nothing of the boots before the current one (volatile storage, or vacuumed), else 0.",
		}),
		sentinel: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kmaint_daemon_sentinel_state",
			Help: "1 for what the host's reboot sentinel says (unknown, clear, requested, cancelled, rebootLoop, error), 0 for the others; all 0 when the daemon watches no sentinel.",
		}, []string{"state"}),
	}
	m.bootTime.Set(float64(bootTime.Unix()))
	// Every source's series starts at 0, so that a boot's first request
	// shows in increase() and rate(): a series born at 1 never rose.
	for _, s := range v1alpha1.Sources() {
		m.requests.WithLabelValues(string(s))
	}
	for _, c := range []prometheus.Collector{m.requests, m.reboots, m.refusedApprovals, m.state, m.outstanding, m.bootTime, m.volatile, m.sentinel} {
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

// setSentinel shows the sentinel's state; nil (no sentinel watched) sets
// every state to 0.
func (m *metrics) setSentinel(st *protocol.SentinelStatus) {
	for _, s := range protocol.SentinelStates() {
		v := 0.0
		if st != nil && st.State == s {
			v = 1
		}
		m.sentinel.WithLabelValues(string(s)).Set(v)
	}
}

func (m *metrics) setVolatileJournal(volatile bool) {
	v := 0.0
	if volatile {
		v = 1
	}
	m.volatile.Set(v)
}

// ReadBootTime reads when the machine booted from a /proc/stat file's btime
// line.
func ReadBootTime(path string) (time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, fmt.Errorf("read boot time: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			secs, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("boot time in %s: %w", path, err)
			}
			return time.Unix(secs, 0), nil
		}
	}
	if err := sc.Err(); err != nil {
		return time.Time{}, fmt.Errorf("read boot time: %w", err)
	}
	return time.Time{}, fmt.Errorf("no btime line in %s", path)
}
