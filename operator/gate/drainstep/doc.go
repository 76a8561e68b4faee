// Package drainstep decides the gate's drain stage: for one admitted,
// unapproved node, from its facts (what its view says, the hook runner's
// decision at the point it reached, its drain's last step, the budget and
// the clock), its one step in a reconcile: the action, what the pool's
// Draining condition says of it, the one node write (a protocol
// transition), the events and the metric. Nothing here reads the cluster
// or writes it: the gate gathers the facts and takes the step
// (operator/gate, drainstage.go), and each branch of the decision has its
// table test here.
//
// The stage's order: the cordon back where someone lifted it, the pool's
// marks, the beforeDrain hooks (nothing is evicted before they pass), the
// drain, then, drained, the beforeReboot hooks, a drain taken again after
// them, and the approval within the budget and for the admitted boot; a
// drain past its timeout is retried, abandoned or forced (DecideDeadline).
package drainstep
