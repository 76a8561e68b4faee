// Package cli is kmaint-daemon's command line: `run` (the DaemonSet's
// process), `request-reboot <reason>` (the host-side API) and `version`. It
// lives apart from main so that tests can run the very same commands on
// simulated nodes.
package cli
