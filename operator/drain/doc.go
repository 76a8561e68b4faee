// Package drain evicts a node's pods one step at a time with kubectl's drain
// library, so that a controller can drain without blocking for the drain's
// whole length: each Step evicts what can be evicted now and reports what is
// left and what stands in the way. A step's evictions go out together, up
// to 16 at a time, as kubectl's own drain sends them, except that the pods
// of one workload are evicted one after another across all the drains of a
// Drainer: evictions under one PodDisruptionBudget at once conflict in the
// API server, which then sleeps (lanes.go). kmaint's own hook Jobs' pods,
// in the hooks namespace, are never drained (hookpods.go).
//
// Steps (steps.go) takes those steps outside the controller's reconcile: a
// pool of workers steps every drain a controller follows, once per poll
// interval and as soon as the pods its last step left are gone, and wakes
// the controller with each result, so that a reconcile never waits on a
// drain. A drain lists its node's pods once, at its first step, and
// watches them from there (nodepods.go).
package drain
