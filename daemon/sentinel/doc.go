// Package sentinel reads what the host says about needing a reboot, as
// kured's --reboot-sentinel and --reboot-sentinel-command do: a file that
// package tools write (Debian and Ubuntu's /var/run/reboot-required, with
// the packages in its .pkgs companion), or a command (needs-restarting -r on
// RHEL-family hosts, exit code 1 meaning a reboot is needed). Each look
// yields an Observation with a fingerprint of what the sentinel says, and
// Decide, a pure function, turns it into a request, a hold or nothing: a
// sentinel unchanged since the reboot it asked for is a reboot loop, and is
// held.
package sentinel
