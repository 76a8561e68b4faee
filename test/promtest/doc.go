// Package promtest runs a real Prometheus server for tests, scraping
// in-process exporters whose values the test sets, so that queries, recording
// rules and the Prometheus adapter (policies/promapi) are exercised against
// the PromQL engine and HTTP API that production uses, outages included
// (Stop and Restart). Its own tests cover the server and the adapter; the
// rules are tested where they live (test/alerts).
//
// The server is the prometheus binary of Debian's prometheus package
// (hack/install-test-deps.sh installs it), or the one $KMAINT_PROMETHEUS
// names, and Promtool the promtool beside it. Without them a test skips, or
// fails when $CI is set.
package promtest
