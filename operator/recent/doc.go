// Package recent keeps the last value made per key, for work that
// controllers are asked for on every reconcile and do at most once per
// interval: a pool's blocking queries or health checks, a node's pods, when
// a node was first seen back.
package recent
