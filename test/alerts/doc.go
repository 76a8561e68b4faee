// Package alerts tests kmaint's Prometheus rules in config/prometheus:
// promtool accepts them and passes their unit tests, the PrometheusRule
// holds exactly the rules of the plain rule files, and the alerts name
// only metrics kmaint exports (operator/metrics.All).
package alerts
