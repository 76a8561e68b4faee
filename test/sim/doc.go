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
// The disruption controller behaves as kube-controller-manager's does where
// drains notice: it syncs one budget per key, within milliseconds of a pod
// change, and counts the pods in a budget's DisruptedPods as unhealthy until
// their deletion shows, so that an eviction a budget has room for is not
// refused because its status lags. It counts a budget's expected pods from
// the pods that exist, not from their controller's scale: an evicted pod's
// place comes back as soon as it is gone, as it does in a real cluster once
// its ReplicaSet's replacement runs elsewhere, only without the seconds that
// replacement takes to start.
//
// Config.Realistic shapes the objects like a cloud cluster's, so that what
// the operator caches and watches weighs what it would: Nodes with 50
// images, cloud labels and kubelet status (about 14 KB of JSON each), pods
// shaped like a Deployment's (about 4.5 KB), DaemonSet pods that drains
// leave (AgentPodsPerNode), and a kubelet-like status refresh
// (StatusRefresh). SeedHistory gives every node a year of finished
// monthly reboots, which the operator keeps when it runs with
// HistoryRetention's flags.
//
// With metrics on, a real Prometheus scrapes one exporter that stands for
// every node's node_exporter: its memory fragmentation, and its health
// (UnhealthySeries, made bad with SetUnhealthy, SetUnhealthyAfterReboot or
// SetUnhealthyOnReboot), for a pool's post-reboot health checks.
package sim
