// Package cmd implements kubectl-kmaint, the kubectl plugin for people
// who run kmaint: the status of pools and nodes, reboot requests and their
// cancellation, rolling a pool, pausing it, a node's reboot history and the
// HTML rollout report.
//
// Each command's logic is an exported function that takes a context, a
// controller-runtime client, a writer and the command's options, so tests call
// it directly; NewCommand wraps them in cobra commands with kubectl's flags.
package cmd
