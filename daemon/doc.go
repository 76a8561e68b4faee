// Package daemon is kmaint's node agent. It turns every reboot request for
// its node (a NodeMaintenance, a config change of its pool) into a journal
// entry, reads its boot's entries back and raises them on its Node, reboots
// when the operator approves the current boot, and after the reboot clears
// what the reboot satisfied.
package daemon
