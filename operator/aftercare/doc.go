// Package aftercare looks after a pool's nodes from their approval on,
// apart from the gate, as cluster-api keeps MachineHealthCheck apart from
// the MachineSet controller. The gate admits, drains and approves, and
// ends there; aftercare owns everything from the node's return:
//
//   - completes the reboot of a node that is back (a new boot ID, Ready)
//     and whose daemon confirmed it, once the pool's afterReboot hooks
//     passed (or released it), in one patch with its settle record
//     (complete.go); the hooks run through hooks.Runner, as the gate's do;
//   - bounds the wait for a node that does not come back from its approved
//     reboot (NodeNotBack, notback.go; it keeps its slot);
//   - bounds the wait for the daemon of a node that is back, deleting its
//     failed daemon pods that the DaemonSet's back-off keeps away, and
//     completes the reboot without the daemon past the bound
//     (DaemonMissing, missing.go);
//   - settles the nodes back from their reboot in a guarded pool
//     (spec.settleTime, spec.healthChecks): each keeps its slot until its
//     settle time passed and the checks found it healthy (decideSettle,
//     settle.go), the checks running at most once per interval for all the
//     pool's settling nodes together (health.go): PromQL queries through
//     Prometheus, object checks (a CEL expression over the node, its pods
//     or pods chosen by selector) through package objectcheck, false a bad
//     result for the node as a series is;
//   - halts the pool when a check fails or cannot run, and reports it:
//     status.settling, status.halt and the Halted condition are this
//     controller's, applied as its own field manager beside the gate's
//     (guard.go, poolstatus.AftercarePart). The gate reads Halted, as NodeMaintenances
//     do, and holds every admission while it is True.
//
// The settle record is written in the completion patch, not after it, so
// that no crash frees the slot of a node that has not settled (invariant
// 5); from then on the settle phase alone writes it. A failure is
// written on the node before the pool's condition says so: the gate, which
// may see the node first, also holds admissions while a node of the pool
// has a failure on record.
//
// Every decision is written on the node or the pool before it counts, so
// a restarted operator goes on from there; what is kept in memory (the
// last evaluation of the checks, when a node was first seen back) only
// saves work or a write, and is bounded on restart (daemonWaitGrace).
package aftercare
