// Package bench measures rolling reboots of hundreds and thousands of
// simulated nodes (in-memory journals, in-process daemons, the operator as
// its own process) and saves the figures under results/, each with the
// command and commit that made it. `make bench` runs 500, 2000 and 5000
// nodes, then test/bench/plot draws every result into
// results/scaling.svg. The simulated cluster is shaped like a real one:
// realistic nodes, DaemonSet and workload pods, and a year of reboot
// history with the monthly schedule that raised it (objects.go).
//
// A rollout has 3 × its ideal + 2 min to finish. One that does not (the
// machine cannot serve the rate of reboots asked of it) is still saved,
// marked unfinished, with what was measured until then: figures per
// reboot count the nodes that rebooted, and its makespan over ideal is a
// lower bound. The benchmark then fails, and the picture draws it hollow.
//
// A result goes into results/ only from a work tree that is its commit:
// from another, the benchmark refuses to start (commit first), unless
// KMAINT_BENCH_RESULTS names another directory for it. make test runs
// both benchmarks once, small (package smoke: 20 nodes each), its
// results in a directory of its own.
//
// The API server's audit log (testbed.WithAuditLog) counts the requests of
// the operator and of the daemons, each a user of its own, by verb and
// resource; KMAINT_BENCH_AUDIT=off turns it off, to measure what it costs
// the API server (apiServerCPUSeconds in the results). KMAINT_BENCH_PPROF
// serves the bench process's profiles, the operator logs where it serves
// its own, and KMAINT_BENCH_KUBECONFIG writes a kubeconfig with which to
// take the API server's.
//
// BenchmarkPaddedNodes measures the operator's memory, at rest and in a
// rollout's first pass, when every Node carries 240 KiB that anyone who
// may patch Nodes can write (issue 60).
//
// Teardown stops whatever watches the nodes, the operator and then the
// daemons, before it deletes them, so that the log holds only what went
// wrong during the rollout.
package bench
