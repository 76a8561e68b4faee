package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kmaint/kmaint/test/promtest"
	"github.com/kmaint/kmaint/test/testbed"
)

// FragmentationRecord is what config/prometheus/fragmentation-rules.yaml
// records per instance: the unusable free space index at order 9.
const FragmentationRecord = "instance:node_memory_unusable_free_index_order9:ratio"

// FreshBootFragmentation is the fragmentation of a node's memory just after
// a boot: almost all free memory is in large blocks.
const FreshBootFragmentation = 0.02

// exporterPort is the port in each node's instance label, node_exporter's.
const exporterPort = "9100"

// MetricsConfig turns on the cluster's metrics: one in-process exporter
// stands for every node's node_exporter (buddyinfo collector on) and a real
// Prometheus scrapes it, honoring its instance labels, with the repository's
// fragmentation recording rule loaded. The operator asks that Prometheus.
type MetricsConfig struct {
	// Interval is Prometheus's scrape and rule evaluation interval.
	// Default 1s.
	Interval time.Duration
	// RuleFiles are the rule files Prometheus loads; by default
	// config/prometheus/fragmentation-rules.yaml.
	RuleFiles []string
}

// metrics is the cluster's exporter and Prometheus.
type metrics struct {
	prom     *promtest.Server
	dir      string
	srv      *http.Server
	listener net.Listener
	// kmaint serves the operator's and the daemons' own metrics.
	kmaint         *http.Server
	kmaintListener net.Listener

	mu sync.Mutex
	// hosts is each node's buddyinfo by node name; a node that is down has
	// none (its node_exporter does not answer).
	hosts map[string]*host
	// reboots counts the nodes come back since SetUnhealthyOnReboot, and
	// the unhealthyAt-th comes back unhealthy.
	reboots, unhealthyAt int
}

// host is one node as its node_exporter reports it.
type host struct {
	name     string
	instance string
	health   health
	index    float64
	down     bool
	blocks   map[string][11]float64 // free blocks per zone and order
}

// startMetrics starts the exporter and Prometheus for nodes, by name and
// address, each at its initial fragmentation.
func (c *Cluster) startMetrics(cfg MetricsConfig, nodes map[string]string, initial func(name string) float64) error {
	m := &metrics{hosts: map[string]*host{}}
	for name, addr := range nodes {
		h := &host{name: name, instance: net.JoinHostPort(addr, exporterPort)}
		h.set(initial(name))
		m.hosts[name] = h
	}
	registry := prometheus.NewRegistry()
	if err := registry.Register(m); err != nil {
		return err
	}
	var err error
	if m.listener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return fmt.Errorf("node exporters: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = m.srv.Serve(m.listener) }()
	c.metrics = m

	// kmaint's own metrics: the in-process operator registers in
	// controller-runtime's registry, each in-process daemon in its own,
	// with its node as a label; one target serves them all.
	if m.kmaintListener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return fmt.Errorf("kmaint metrics: %w", err)
	}
	kmux := http.NewServeMux()
	kmux.Handle("/metrics", promhttp.HandlerFor(prometheus.GathererFunc(c.gatherKmaint), promhttp.HandlerOpts{}))
	m.kmaint = &http.Server{Handler: kmux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = m.kmaint.Serve(m.kmaintListener) }()

	if m.dir, err = os.MkdirTemp("", "kmaint-sim-prometheus-"); err != nil {
		return err
	}
	rules := cfg.RuleFiles
	if len(rules) == 0 {
		rules = []string{filepath.Join(testbed.RepoRoot(), "config", "prometheus", "fragmentation-rules.yaml")}
	}
	m.prom, err = promtest.Run(m.dir, promtest.Options{
		Targets:     []string{m.listener.Addr().String(), m.kmaintListener.Addr().String()},
		HonorLabels: true,
		RuleFiles:   rules,
		Interval:    cfg.Interval,
	})
	if err != nil {
		return err
	}
	// Prometheus scrapes a new target only after a few seconds; until then
	// every policy would see no node at all.
	ctx, cancel := context.WithTimeout(c.ctx, time.Minute)
	defer cancel()
	_, err = m.prom.WaitForValue(ctx, FragmentationRecord, func(v model.Vector) bool { return len(v) == len(nodes) })
	return err
}

// stop stops Prometheus and the exporter.
func (m *metrics) stop() {
	if m.prom != nil {
		m.prom.Stop()
	}
	if m.srv != nil {
		_ = m.srv.Close()
	}
	if m.kmaint != nil {
		_ = m.kmaint.Close()
	}
	if m.dir != "" {
		_ = os.RemoveAll(m.dir)
	}
}

// buddyinfoDesc is node_exporter's series, under the job name the shipped
// recording rule reads (kube-prometheus-stack's).
var buddyinfoDesc = prometheus.NewDesc("node_buddyinfo_blocks",
	"Count of free blocks according to size.", []string{"instance", "node", "zone", "size"}, prometheus.Labels{"job": "node-exporter"})

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- buddyinfoDesc
	ch <- unhealthyDesc
}

// Collect implements prometheus.Collector: every node that is up, as its
// node_exporter would report /proc/buddyinfo.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, h := range m.hosts {
		if h.down {
			continue
		}
		if h.health.unhealthy {
			ch <- prometheus.MustNewConstMetric(unhealthyDesc, prometheus.GaugeValue, 1, h.instance, h.name)
		}
		for zone, blocks := range h.blocks {
			for order, n := range blocks {
				ch <- prometheus.MustNewConstMetric(buddyinfoDesc, prometheus.GaugeValue, n, h.instance, "0", zone, strconv.Itoa(order))
			}
		}
	}
}

// freePages is a simulated host's free memory in 4 KiB pages: 2 GiB.
const freePages = 1 << 19

// set makes h's buddyinfo one whose unusable free space index at order 9
// (over all zones but DMA) is index, give or take a block of 512 pages in
// 2^19, and records the index it computes to.
func (h *host) set(index float64) {
	index = min(max(index, 0), 1)
	h.blocks = map[string][11]float64{
		// DMA's few large blocks are there to be left out, as the rule does.
		"DMA": {1, 1, 0, 1, 2, 1, 1, 0, 1, 1, 3},
	}
	var free, usable float64
	// DMA32 holds an eighth of the free memory, Normal the rest.
	for zone, share := range map[string]float64{"DMA32": 1.0 / 8, "Normal": 7.0 / 8} {
		pages := math.Round(freePages * share)
		var b [11]float64
		// Usable memory in order-10 blocks, and an order-9 one for what is
		// left of it.
		use := math.Round(pages*(1-index)/512) * 512
		b[10] = math.Floor(use / 1024)
		b[9] = (use - b[10]*1024) / 512
		// The rest in equal shares over orders 8 down to 1, rounded down to
		// whole blocks; order 0 takes up the remainder page by page.
		rest := pages - use
		left := rest
		for order := 8; order >= 1; order-- {
			size := math.Exp2(float64(order))
			b[order] = math.Floor(rest / 9 / size)
			left -= b[order] * size
		}
		b[0] = left
		h.blocks[zone] = b
		free += pages
		usable += use
	}
	h.index = (free - usable) / free
}

// SetFragmentation sets how fragmented the node's free memory is: the
// buddyinfo its node_exporter reports from now on gives the index (0 to 1)
// the recording rule computes. It returns the index the blocks make, which
// differs from index by less than 0.001. The node keeps it until it is set
// again or the node reboots.
func (c *Cluster) SetFragmentation(node string, index float64) (float64, error) {
	if c.metrics == nil {
		return 0, errors.New("the cluster runs without metrics")
	}
	c.metrics.mu.Lock()
	defer c.metrics.mu.Unlock()
	h, ok := c.metrics.hosts[node]
	if !ok {
		return 0, fmt.Errorf("no node %s", node)
	}
	h.set(index)
	return h.index, nil
}

// Fragmentation is the index the node's buddyinfo gives, and false while
// the node is down or without metrics.
func (c *Cluster) Fragmentation(node string) (float64, bool) {
	if c.metrics == nil {
		return 0, false
	}
	c.metrics.mu.Lock()
	defer c.metrics.mu.Unlock()
	h, ok := c.metrics.hosts[node]
	if !ok || h.down {
		return 0, false
	}
	return h.index, true
}

// Instance is the node's instance label, its InternalIP and node_exporter's
// port.
func (c *Cluster) Instance(node string) string {
	return net.JoinHostPort(c.addresses[node], exporterPort)
}

// Prometheus is the Prometheus the cluster's metrics go to, or nil without
// metrics.
func (c *Cluster) Prometheus() *promtest.Server {
	if c.metrics == nil {
		return nil
	}
	return c.metrics.prom
}

// hostDown takes the node's node_exporter away for a reboot.
func (m *metrics) hostDown(node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h, ok := m.hosts[node]; ok {
		h.down = true
	}
}

// hostUp brings the node's node_exporter back after a reboot, with the
// unfragmented memory of a fresh boot.
func (m *metrics) hostUp(node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h, ok := m.hosts[node]; ok {
		h.down = false
		h.set(FreshBootFragmentation)
		h.health.rebooted()
		if m.reboots++; m.reboots == m.unhealthyAt {
			h.health.unhealthy = true
		}
	}
}

// gatherKmaint gathers the operator's metrics and those of every daemon that
// runs in this process.
func (c *Cluster) gatherKmaint() ([]*dto.MetricFamily, error) {
	gs := prometheus.Gatherers{ctrlmetrics.Registry}
	for _, n := range c.Nodes() {
		if g, ok := n.(prometheus.Gatherer); ok {
			gs = append(gs, g)
		}
	}
	return gs.Gather()
}
