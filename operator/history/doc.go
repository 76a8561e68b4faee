// Package history keeps the operator's copy of the finished
// NodeMaintenances (Succeeded or Failed): a year of a cluster's reboots,
// most of the records there are, read only for what they say about the
// past (retention, the policies' cooldowns and outcomes, a request raised
// on a node being recorded once).
//
// The manager's cache holds the open records whole; a record that finishes
// leaves it (its watch selects by status.phase) and comes here, where it is
// kept in a form under half the size of the slimmest cached object, a fifth
// of a whole one (Record; BenchmarkHeldRecord). Client merges the two
// for the controllers, so that a list of a node's records reads as one.
package history
