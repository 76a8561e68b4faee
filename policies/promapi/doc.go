// Package promapi is the adapter between policies.Querier and a Prometheus
// server's HTTP API. It is apart from policies so that what only reads the
// decisions (the kubectl plugin's report) does not link the HTTP client;
// the operator is the one binary that asks Prometheus.
package promapi
