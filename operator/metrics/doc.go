// Package metrics defines the operator's Prometheus metrics. Event metrics
// (requests, admissions, drain and reboot durations, failures, policy
// evaluations) are recorded by the controllers when the event happens;
// state metrics (per pool, per policy) are collected at scrape time from the
// operator's cache, so they can never disagree with the objects' status.
// Labels are bounded: pools, policies, sources, reasons and, for a policy's
// query values, nodes — never a request id.
package metrics
