// Package soak runs kmaint's whole reboot path for a long while under
// faults that land at random moments and together, and checks the whole
// history afterwards (package checker), as the disruptive and soak suites
// of etcd and Kubernetes do.
//
// The cluster is simulated (a real API server and etcd, simulated kubelets,
// the real daemon in process with an in-memory journal per node); the
// operator runs as two real processes with leader election, as its
// Deployment does. A seeded random schedule makes host and API requests and
// config rollouts, and injects faults: a replica killed (SIGKILL) and
// started again, its Lease handed over; a daemon killed and started again;
// a node rebooted by hand, outside kmaint; a node slower to come back than
// the operator's --node-return-timeout; a pool's budget changed, the pool
// paused and resumed, a node relabelled into another pool and back. When
// the time is up the faults stop, and every request must end within a
// bound.
//
// `make soak SOAK_DURATION=30m SOAK_SEED=7` runs one and writes its result
// under results/; a failing run prints the seed that replays it.
package soak
