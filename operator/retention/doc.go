// Package retention keeps the reboot history bounded: it deletes finished
// NodeMaintenances beyond a count per node, or older than an age, and never
// one that cooldowns, a policy or the node protocol still reads.
package retention
