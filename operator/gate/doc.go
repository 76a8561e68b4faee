// Package gate is the approval gate: it admits nodes that request a reboot
// within their pool's budget, in the order they asked, cordons and drains
// them, runs their hooks before the reboot, and approves each reboot for the
// boot it was requested in. There it ends: from the node's return on
// (completion, the afterReboot hooks, settle, health checks, halts) the
// node is aftercare's (package aftercare).
//
// Like every kmaint reconciler it reads observe → decide → act: observe
// reads the pool's nodes through protocol.Read and resolves the pool's
// budget once; decide (admission.go) makes the one admission decision, and
// the actions (releaseVoid, admit, drain) write what was decided; the pool's
// status reports the same decision, so nothing is decided twice.
//
// # The admission path
//
// decide runs, once per reconcile and in order: the pool-wide holds
// (policies.Holds: an unreadable pool, the cluster's stop, a selector,
// windows or blockingPodSelector that cannot be read, a pause, a halt,
// the cache behind the API server), each a named function returning a
// reason constant and a message; then the plan (plan.Admissions, a pure
// function of the views, package view), which takes the waiting nodes in the order they asked and
// passes over those their own verdicts hold (an opt-out, closed windows or
// a freeze) and, when a node's turn comes, those its pods hold; then the
// budget, lowered by a rollout's canaries (plan.CanaryBudget) and held by a
// blocking query (blocking.go). Whether the cache is behind is asked of
// the API server only once the plan admits a node (fresh.go); then the
// holds run again with the answer. The
// hold, or else what the plan left waiting (policies.Turns), is the pool's
// Blocked condition; the budget, the blocking query and the canaries go to
// the pool's status, which the waiting requests quote (package
// maintenance). A new hold is one function in policies.Holds, its reason
// constant, and its case in the tests.
//
// How pools share nodes, the drain's deadline, what happens after the
// approval and how the gate keeps up at thousands of nodes are in the
// package's README (Design notes).
package gate
