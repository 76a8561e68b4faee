// Package maintenance keeps NodeMaintenance objects in step with the node
// protocol: it accepts or refuses new requests, records requests that start
// on the node (host, config) as NodeMaintenances, and moves each through its
// phases as its node is admitted, drained, rebooted and back. It also names
// on each Node the requests that start in the API for the node's daemon,
// which watches no NodeMaintenance (apirequests.go, protocol.APIRequests).
//
// Reconcile reads observe → decide → act: it reads the node through
// protocol.Read and why its requests wait through policies.Wait, on what
// package waits gathers as it does for the gate (observe); decide is a pure
// function from a NodeMaintenance and its node to a verdict, which takes
// the stage of an admitted node from the protocol (NodeState.InFlight) and
// adds what only this controller knows: a request cancelled, a duplicate,
// one not yet raised, the phase a request showed; and act patches each
// NodeMaintenance that changed.
//
// A node's reconciles follow each other faster than the cache learns of
// the last write: the controller keeps what it created and wrote, as the
// API server returned it, until its cache shows it (written.go), so it
// never patches a stale copy nor misses a record it just made. Events go
// out for Rebooted, Failed and warnings; the steps between are in
// status.phaseTimes, taken from the gate's admission when the controller
// saw them late.
package maintenance
