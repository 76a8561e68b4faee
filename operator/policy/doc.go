// Package policy evaluates RebootPolicies and raises NodeMaintenances for the
// nodes their triggers pick: a Prometheus query held past a threshold, a
// cron schedule, a firing Alertmanager alert, or a Node condition held for
// a while. The decisions are pure functions in package policies; this
// package reads the cluster and Prometheus, applies them, and reports in
// the policy's status. The requests it raises travel the same gate as every
// other request.
//
// Reconcile reads observe → decide → act: observe reads the cluster,
// evaluate asks the trigger (Prometheus, the alerts recorded, the schedule,
// the Nodes' conditions), decide applies the guards (policies.Select) and
// raise, the act, creates the requests.
package policy
