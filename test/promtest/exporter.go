package promtest

import (
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Exporter serves gauges the test sets at /metrics on 127.0.0.1, from a
// registry of its own. Each metric name is a gauge whose label names are
// fixed by its first Set. It is closed when the test ends. Its methods are
// safe to call from any goroutine.
type Exporter struct {
	t        testing.TB
	srv      *httptest.Server
	registry *prometheus.Registry

	mu     sync.Mutex
	gauges map[string]gauge
}

type gauge struct {
	vec    *prometheus.GaugeVec
	labels []string // sorted
}

// NewExporter starts an Exporter with no metrics.
func NewExporter(t testing.TB) *Exporter {
	t.Helper()
	e := &Exporter{t: t, registry: prometheus.NewRegistry(), gauges: map[string]gauge{}}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(e.registry, promhttp.HandlerOpts{}))
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

// Address is the exporter's host:port, a scrape target for Options.Targets.
func (e *Exporter) Address() string {
	return strings.TrimPrefix(e.srv.URL, "http://")
}

// Set sets the series of metric name with these labels to value, creating
// the metric on its first Set. A Set whose label names differ from the
// metric's first fails the test (Errorf: the test goes on).
func (e *Exporter) Set(name string, labels map[string]string, value float64) {
	e.t.Helper()
	g, ok := e.gauge(name, labels, true)
	if !ok {
		return
	}
	g.vec.With(labels).Set(value)
}

// SetNaN sets the series to NaN, as an exporter does for a value it could
// not read.
func (e *Exporter) SetNaN(name string, labels map[string]string) {
	e.t.Helper()
	e.Set(name, labels, math.NaN())
}

// Delete removes the series of metric name with these labels, so that the
// next scrape goes without it and Prometheus marks it stale. It reports
// whether there was such a series.
func (e *Exporter) Delete(name string, labels map[string]string) bool {
	e.t.Helper()
	g, ok := e.gauge(name, labels, false)
	if !ok {
		return false
	}
	return g.vec.Delete(labels)
}

// gauge returns the metric name, registering it if create is set, and
// checks that labels has its label names.
func (e *Exporter) gauge(name string, labels map[string]string, create bool) (gauge, bool) {
	e.t.Helper()
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k)
	}
	slices.Sort(names)

	e.mu.Lock()
	defer e.mu.Unlock()
	g, ok := e.gauges[name]
	if !ok {
		if !create {
			return gauge{}, false
		}
		g = gauge{
			vec:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: "Set by a test through promtest.Exporter."}, names),
			labels: names,
		}
		if err := e.registry.Register(g.vec); err != nil {
			e.t.Errorf("promtest exporter: register %s: %v", name, err)
			return gauge{}, false
		}
		e.gauges[name] = g
	}
	if !slices.Equal(g.labels, names) {
		e.t.Errorf("promtest exporter: %s has labels %v, not %v", name, g.labels, names)
		return gauge{}, false
	}
	return g, true
}
