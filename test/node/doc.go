// Package node runs a simulated node on this host: a private mount namespace
// with its own systemd-journald, journal directory and boot ID file bind-
// mounted over /proc/sys/kernel/random/boot_id, and the real kmaint-daemon
// in it. A simulated reboot writes a new boot ID and restarts journald and
// the daemon, which is to the journal exactly what a real reboot is. The
// reboot itself is the one faked seam: the daemon's rebooter prints a line
// the node acts on. Root and systemd's journald are needed.
package node
