// Package policies holds kmaint's decisions as pure functions with the clock
// passed in: maintenance windows now, RebootPolicy triggers, cooldowns and
// caps next. Nothing here talks to the API server or to Prometheus.
package policies
