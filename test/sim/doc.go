// Package sim is a simulated cluster on the test bed's real API server:
// simulated kubelets keep each Node's status and finish pod deletions, a
// simulated disruption controller keeps PodDisruptionBudgets current, and
// every node runs the real kmaint-daemon, either as a process with its own
// systemd-journald (test/node) or in this process with an in-memory journal
// for thousands of nodes. The reboot itself is the one faked seam. The real
// operator runs beside it and can be killed and restarted at any moment.
// An in-process daemon's log leaves out the requests its own stop (a
// simulated reboot) cuts short, so that a rollout of thousands of nodes
// logs what went wrong, not two lines per reboot; Config.DaemonConfig gives
// the daemons a user of their own, to tell their requests apart at the API
// server.
//
// Config.Realistic shapes the objects like a cloud cluster's, so that what
// the operator caches and watches weighs what it would: Nodes with 50
// images, cloud labels and kubelet status (about 14 KB of JSON each), pods
// shaped like a Deployment's (about 4.5 KB), DaemonSet pods that drains
// leave (AgentPodsPerNode), and a kubelet-like status refresh
// (StatusRefresh). SeedHistory gives every node a year of finished
// monthly reboots, and the cluster the monthly schedule (a RebootPolicy)
// that raised them, which the operator evaluates as it would in such a
// cluster; it keeps the history when it runs with HistoryRetention's flags.
//
// With metrics on, a real Prometheus scrapes one exporter that stands for
// every node's node_exporter: its memory fragmentation, and its health
// (UnhealthySeries, made bad with SetUnhealthy, SetUnhealthyAfterReboot or
// SetUnhealthyOnReboot), for a pool's post-reboot health checks.
package sim
