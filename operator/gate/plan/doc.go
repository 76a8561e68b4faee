// Package plan is the gate's admission decision for one pool at one
// moment, as functions of the pool's node views (package view): which
// waiting nodes to admit within the budget and in the order they asked
// (Admissions), which drained nodes to approve (Approvable), the budget
// its rollout's canaries leave (CanaryBudget), why a node counts against
// the budget (UnavailableBecause), and what its blocking queries say
// (EvaluateBlocking, through the Querier it is given).
//
// The queue is read through Queue, the ordinary members kept in its order
// between reconciles (package members): a plan pulls those it reads, head
// first. The gate reads its pool, calls these, and acts on and reports
// what they decided; nothing here keeps state or writes anything.
package plan
