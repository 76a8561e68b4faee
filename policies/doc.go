// Package policies holds kmaint's decisions as pure functions with the clock
// passed in: maintenance windows, freeze periods (FrozenAt: a recurring
// freeze is a window that means closed, and a freeze that cannot be read
// freezes its owner), a pool's budget, RebootPolicy triggers (schedules and
// Prometheus thresholds) and the For, cooldown and cap that stand between a
// candidate node and a request. The decisions take query
// results as values and never ask anyone: Querier is the seam through which
// the controllers ask Prometheus, and policies/promapi, the adapter to its
// HTTP API, is the one place that talks to a server.
package policies
