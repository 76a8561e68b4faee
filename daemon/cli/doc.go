// Package cli is kmaint-daemon's command line: `run` (the DaemonSet's
// process) and `request-reboot <reason>` (the host-side API). It lives apart
// from main so that tests can run the very same commands on simulated nodes.
package cli
