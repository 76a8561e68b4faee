// Package dashboards builds kmaint's Grafana dashboards as code from the
// metric contract in operator/metrics, and renders them to the JSON files
// beside this file (fleet.json, policies.json, node.json) that Grafana
// imports. Run `go run ./dashboards/gen` (or `go generate ./dashboards/`)
// after changing a dashboard; the tests fail while the committed JSON
// differs from what the code builds.
//
// Every panel queries the Prometheus data source chosen in the dashboard's
// `datasource` variable. Queries returns each panel's PromQL with the
// dashboard variables filled in, so tests can run them against a real
// Prometheus.
package dashboards

//go:generate go run ./gen -out .
