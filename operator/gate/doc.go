// Package gate is the approval gate: it admits nodes that request a reboot
// within their pool's budget, in the order they asked, cordons and drains
// them, approves each reboot for the boot it was requested in, and once the
// node is back with a new boot ID, uncordons what it cordoned and frees the
// slot for the next node.
//
// Like every kmaint reconciler it reads observe → decide → act: observe
// reads the pool's nodes through protocol.Read, planAdmissions decides as a
// pure function, and the actions (finish, admit, drain) write what was
// decided; the pool's status comes from the same picture, its Blocked
// condition from policies.Wait.
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
// comes, never cached cluster-wide. A node annotated while it drains is
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
// Ready, and its daemon's confirmation. Two bounds keep a person from
// waiting unawares. A node not back within NodeReturnTimeout is reported
// (NodeNotBack, notback.go) and keeps its slot, since it really is
// unavailable; a node back whose daemon does not confirm within
// DaemonConfirmTimeout is completed without it (DaemonMissing, missing.go).
// Each wait counts from a time written on the node, so restarts do not
// lengthen it.
package gate
