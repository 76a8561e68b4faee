// Package bench measures rolling reboots of hundreds and thousands of
// simulated nodes (in-memory journals, in-process daemons, the operator as
// its own process) and saves the figures under results/. The simulated
// cluster is shaped like a real one: realistic nodes, DaemonSet and
// workload pods, and a year of reboot history (objects.go).
package bench
