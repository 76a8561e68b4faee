// Package members keeps, between the gate's reconciles, what it made of
// one pool's nodes, sorted by what the gate does with each: the active
// members, which its phases read node by node, and the quiet ones, which
// it counts (Tally) and, when they ask to be admitted, keeps in the
// queue's order until the plan reaches them.
//
// A Pool is brought up to date node by node (Set, from poolnodes.Kept.Sync),
// so that an event costs the gate the nodes that changed and the head of
// its queue, not the pool. A Pass is one reconcile's reading of it: the
// active members made ready for the phases, and the quiet ones pulled in
// as the plan reaches them, each once.
//
// The package knows nothing of what a member is: the gate says where each
// goes (Place) when it makes the member's value, and in what order the
// queue holds them. Aftercare keeps the same nodes (poolnodes.Kept) but
// reads every one at each reconcile, and keeps none of this.
package members
