// Package gate is the approval gate: it admits nodes that request a reboot
// within their pool's budget, in the order they asked, cordons and drains
// them, approves each reboot for the boot it was requested in, and once the
// node is back with a new boot ID, uncordons what it cordoned and frees the
// slot for the next node.
//
// Like every kmaint reconciler it reads observe → decide → act: observe
// reads the pool's nodes through protocol.Read and resolves the pool's
// budget once; decide (admission.go) makes the one admission decision, and
// the actions (finish, admit, drain) write what was decided; the pool's
// status reports the same decision, so nothing is decided twice.
//
// # The admission path
//
// decide runs, once per reconcile and in order: the pool-wide holds
// (policies.Holds: an unreadable pool, the cluster's stop, a selector,
// windows or blockingPodSelector that cannot be read, a pause, a halt),
// each a named function returning a reason constant and a message; then
// the plan (planAdmissions, a pure function), which takes the waiting
// nodes in the order they asked and passes over those their own verdicts
// hold (an opt-out, closed windows or a freeze) and, when a node's turn
// comes, those its pods hold; then the budget, lowered by a rollout's
// canaries (canary.go) and held by a blocking query (blocking.go). The
// hold, or else what the plan left waiting (policies.Turns), is the pool's
// Blocked condition; the budget, the blocking query and the canaries go to
// the pool's status, which the waiting requests quote (package
// maintenance). A new hold is one function in policies.Holds, its reason
// constant, and its case in the tests.
//
// # Which pool a node is in, and which budgets it counts against
//
// A node's labels put it in a pool (pools.Of): the pool whose selector
// matches it, or the default pool. That pool drives it: admits, drains,
// approves and completes it. A node is admitted only when exactly one pool
// holds it, so a node no pool can vouch for waits:
//
//   - a node two pools select is admitted by neither; both count it and
//     report it (Conflicting);
//   - a pool whose selector cannot be parsed (stored before the schema
//     refused it) does not know its nodes, so every node it might select
//     (meets each of its requirements that can be parsed) is one of its nodes
//     as well as of the pool it would be in otherwise, and is admitted by
//     neither. The broken pool reports them (Degraded, InvalidSelector), the
//     other pool too (Conflicting, InvalidSelector), and so does each waiting
//     request. Nodes it cannot select are not held up.
//
// A node in flight (admitted, until its reboot completes) counts against
// every pool that holds it now and against the pool that admitted it, which
// its admission annotation names. A person who relabels it into another pool
// in the middle of its reboot thus frees no slot in the pool it leaves,
// which admits no one in its place until the reboot completes, and the pool
// it joins counts it at once, admitting and approving no one past its
// budget; the pool it joins finishes it. Admissions written before they
// named their pool count only where the node is.
//
// The gate keeps every pool within its budget, but a person can take a pool
// past it: by moving a node in flight into a full pool, lowering
// maxUnavailable, cordoning nodes by hand; and nodes go NotReady. Such a pool
// admits no node that would add to the count and approves no drained node
// until it is back within its budget, and reports it (setOverBudget): the
// condition OverBudget names the nodes that count and why, each episode
// gets one Warning event and one count in
// kmaint_pool_over_budget_episodes_total, and kmaint_pool_over_budget is 1
// while it lasts.
//
// # What holds admissions besides the budget
//
// The cluster's MaintenanceGate (named cluster) stops every pool, the
// default pool too, while it is paused or cannot be read. A node a person
// annotated do-not-disrupt, or whose pods say so (or match the pool's
// blockingPodSelector), is not admitted and gives its turn to the next
// waiting node (optout.go): pods are listed per node, only when its turn
// comes, never cached cluster-wide (pods.go). A node annotated while it drains is
// released before its approval, as a cancellation would be.
//
// A freeze period of the pool, or of a request's RebootPolicy, holds the
// request as a closed window does (pools.Windows folds it into the
// request's verdict): the node waits without taking budget, its turn passes
// to a node whose request has ignoreFreezes, and the gate wakes when the
// freeze ends. The pool's own freeze is reported whether or not anything
// waits (freeze.go): status.freeze, the Frozen condition, and FreezeStarted
// and FreezeEnded events decided against the last status written, so that
// a restart announces nothing twice.
//
// # At the drain's deadline, and the node's marks
//
// A drain past its pool's timeout ends as drain.onTimeout says
// (decideDeadline, drainend.go): Retry uncordons the node and records the
// attempt on it (kmaint.io/drain-retry), so that the node waits out the
// backoff unadmitted and a restarted operator counts on; the last attempt
// abandons. Abandon uncordons and fails the requests (kmaint.io/drain-failed).
// Force deletes the pods eviction could not move, recording them on the
// node first (kmaint.io/drain-forced), and approves. Before a node's drain
// starts, the pool's nodeMarking.duringReboot labels and taints go on it,
// recorded in kmaint.io/marks (marks.go); whatever uncordons the node takes
// off exactly what that record says, so a spec changed mid-reboot or a
// restart leaves nothing behind. Marks that would move the node to another
// pool are refused, and the node is not drained.
//
// # After the approval
//
// A node approved to reboot holds its slot until it is back: a new boot ID,
// Ready, and its daemon's confirmation; the gate then completes the reboot
// in one patch (protocol.Complete). Aftercare (package aftercare) does the
// rest, apart from admission: it bounds the waits for a node that does not
// come back and for a daemon that does not confirm, settles the nodes of a
// guarded pool and halts the pool when a health check fails. In a guarded
// pool the completion patch also writes the node's settle record
// (protocol.SettleOnCompletion), so that no crash frees the slot of a node
// that has not settled; from then on aftercare alone writes it.
//
// The gate reads the halt from the pool's Halted condition, as
// NodeMaintenances do, and from a failure on record on a node of the pool
// (halt.go), which aftercare writes first: a halted pool admits nothing new,
// as a paused one, and its Blocked condition says Halted. The gate's
// status patch leaves aftercare's fields out and writes the conditions
// locked to the version of the pool it read (statuswrite.go).
//
// With healthChecks.canaries N, while a desiredConfig rollout is under way,
// the budget for admissions is N less the nodes that run the new config and
// settled, while that is below maxUnavailable (canary.go): the first N go,
// and the rest wait (Blocked WaitingForCanaries) until they pass.
//
// # At thousands of nodes
//
// Every reconcile reads every node from the cache without copying it (a
// write copies first, in patchNode). A reboot's routine steps are events
// on the node only, the pool named as related; warnings and halts go on
// both. The pool's status is written at most once a second while only its
// counts change (statusPace, pace.go); a change of its state is written at
// once.
//
// A reconcile never waits on a drain. Drains are stepped outside it
// (drainSteps, drainstep.go): 16 workers over all pools take each
// draining node's step (a pod list, then its evictions in parallel) every
// DrainPollInterval, and wake the node's pool with the result. The
// reconcile reads each drain's last result, approves the nodes drained and
// asks for the others to go on; a drain it stops asking about (approved,
// given up, the node gone from the pool) is stepped no more. A result is
// read only for the admission it was stepped for, and a node cordoned
// again after someone lifted the cordon starts over, so no step taken
// before can approve it. A drain that hangs on the API server so holds up
// no other node: the slot another frees is refilled in the next short
// reconcile.
package gate
