package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// UnhealthySeries is the series each simulated node's exporter reports
// with value 1 while the node is unhealthy, labelled with the node's name
// (node) and instance; a healthy node reports none. A health check on
// `UnhealthySeries == 1` finds the unhealthy nodes.
const UnhealthySeries = "sim_node_unhealthy"

var unhealthyDesc = prometheus.NewDesc(UnhealthySeries,
	"1 while the simulated node is unhealthy; absent while it is healthy.", []string{"instance", "node"}, nil)

// Guarded makes the pool guard its reboots: each rebooted node keeps its
// slot for settle while one health check, named check, looks for it in
// UnhealthySeries == 1 every MinHealthCheckInterval, the shortest the API
// allows. A node made unhealthy (SetUnhealthyOnReboot,
// SetUnhealthyAfterReboot) halts the pool; a Config with Metrics serves
// the series.
func (p PoolSpec) Guarded(check string, settle time.Duration) PoolSpec {
	p.SettleTime = settle
	p.HealthChecks = &v1alpha1.HealthChecks{
		Queries:  []v1alpha1.HealthCheck{{Name: check, Query: UnhealthySeries + " == 1"}},
		Interval: &metav1.Duration{Duration: v1alpha1.MinHealthCheckInterval},
	}
	return p
}

// health is a node's simulated health.
type health struct {
	unhealthy bool
	// afterReboot makes the node unhealthy when it comes back from its
	// next reboot.
	afterReboot bool
}

// SetUnhealthyAfterReboot makes the node come back from its next reboot
// unhealthy (or not, with false): its UnhealthySeries goes to 1 as its
// exporter comes back, and stays until SetHealthy.
func (c *Cluster) SetUnhealthyAfterReboot(node string, unhealthy bool) error {
	return c.setHealth(node, func(h *health) { h.afterReboot = unhealthy })
}

// SetUnhealthyOnReboot makes the nth node reboot from now on, counting
// every node of the cluster, come back unhealthy; 0 makes none. Unhealthy
// names it once it did.
func (c *Cluster) SetUnhealthyOnReboot(n int) error {
	if c.metrics == nil {
		return errors.New("the cluster runs without metrics")
	}
	c.metrics.mu.Lock()
	defer c.metrics.mu.Unlock()
	c.metrics.reboots, c.metrics.unhealthyAt = 0, n
	return nil
}

// Unhealthy names the nodes that are unhealthy now.
func (c *Cluster) Unhealthy() []string {
	if c.metrics == nil {
		return nil
	}
	c.metrics.mu.Lock()
	defer c.metrics.mu.Unlock()
	var out []string
	for name, h := range c.metrics.hosts {
		if h.health.unhealthy {
			out = append(out, name)
		}
	}
	return out
}

// KmaintMetricsAddr is the address (host:port) that serves the operator's
// and the daemons' metrics, which the cluster's Prometheus scrapes; empty
// without metrics.
func (c *Cluster) KmaintMetricsAddr() string {
	if c.metrics == nil {
		return ""
	}
	return c.metrics.kmaintListener.Addr().String()
}

// SetHealthy makes the node healthy: its UnhealthySeries goes away.
func (c *Cluster) SetHealthy(node string) error {
	return c.setHealth(node, func(h *health) { h.unhealthy, h.afterReboot = false, false })
}

// SetUnhealthy makes the node unhealthy now.
func (c *Cluster) SetUnhealthy(node string) error {
	return c.setHealth(node, func(h *health) { h.unhealthy = true })
}

func (c *Cluster) setHealth(node string, set func(*health)) error {
	if c.metrics == nil {
		return errors.New("the cluster runs without metrics")
	}
	c.metrics.mu.Lock()
	defer c.metrics.mu.Unlock()
	h, ok := c.metrics.hosts[node]
	if !ok {
		return fmt.Errorf("no node %s", node)
	}
	set(&h.health)
	return nil
}

// rebooted applies what a reboot does to the node's health.
func (h *health) rebooted() {
	if h.afterReboot {
		h.unhealthy, h.afterReboot = true, false
	}
}
