// Package hostcommand puts a copy of kmaint-daemon on the node's own file
// system, so that root on the host can run `kmaint-daemon request-reboot`
// and `cancel-reboot` there: the host-side API needs the binary on the host,
// and the image is the only place it ships in. The chart's daemon init
// container runs it (daemon.hostCommandDir) when a cluster asks for it.
package hostcommand
