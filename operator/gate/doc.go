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
package gate
