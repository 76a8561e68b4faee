// Package rebooter reboots the node. It is the one seam the simulated cluster
// fakes: everything up to the reboot is the real daemon.
package rebooter
