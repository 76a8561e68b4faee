// Package alerts tests kmaint's Prometheus rules in config/prometheus:
// promtool accepts them and passes their unit tests, the PrometheusRule
// holds exactly the rules of the plain rule files, the alerts name only
// metrics kmaint exports (operator/metrics.All), and the ServiceMonitor and
// PodMonitor scrape what the alerts match. The memory fragmentation
// recording rule also runs in a real Prometheus (test/promtest) against
// known buddyinfo, and the sample RebootPolicy that queries it decodes
// strictly.
package alerts
