// Package soak runs kmaint's whole reboot path for a long while under
// faults that land at random moments and together, and checks the whole
// history afterwards (package checker), as the disruptive and soak suites
// of etcd and Kubernetes do.
//
// The cluster is simulated (a real API server and etcd, simulated kubelets,
// the real daemon in process with an in-memory journal per node); the
// operator runs as two real processes with leader election, as its
// Deployment does. A seeded random schedule makes requests from every
// source (the host's request-reboot, NodeMaintenances, config rollouts, a
// metric policy on a real Prometheus, an alert policy fed by an
// Alertmanager-like sender over the operator's TLS webhook, cron schedules,
// the host's reboot sentinel), and, on a clock of its own, injects faults:
// a replica killed (SIGKILL) and started again, its Lease handed over; the
// API server restarted, etcd compacted so that watches list again; a daemon
// killed, or cut off from the API server (dropped or stalled); a node
// rebooted by hand, outside kmaint; a node slower to come back than the
// operator's --node-return-timeout; Prometheus or the alert webhook
// unreachable; a pool's budget changed, the pool paused and resumed, a node
// relabelled into another pool and back. When the time is up the faults
// stop, and every request must end within a bound.
//
// `go test ./test/soak` runs the short soak (3 minutes, 72 nodes, at least
// 200 reboots and every kind made), and TestEachSourceRebootsItsNode, which
// shows each source whose requests the checker cannot name asks for its
// node on its own. `make soak SOAK_DURATION=45m SOAK_SEED=7` runs a long
// one (every kind at least SOAK_MIN_EACH times) and writes its result under
// results/; a failing run prints the command that replays it.
package soak
