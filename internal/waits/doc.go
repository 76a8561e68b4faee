// Package waits gathers what the wait chain (policies.WaitChain) reads:
// of a pool, for the holds that hold all of it (the gate, before it plans),
// and of one node, for why its requests wait (the NodeMaintenance
// controller, for their Waiting condition). Both read the pool's spec and
// status, the cluster's stop and the windows through it, so that the pool
// and its requests never tell a wait from facts read two ways, and a hold
// that reads something new of the pool reads it here, once.
package waits
