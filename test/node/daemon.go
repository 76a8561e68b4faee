package node

import (
	"context"
	"os"

	"github.com/kmaint/kmaint/daemon/cli"
)

// DaemonEnv marks a re-run of a binary (a test binary, the demo) as the
// daemon of a simulated node.
const DaemonEnv = "KMAINT_SIMULATED_NODE_DAEMON"

// MaybeRunDaemon runs kmaint-daemon's command line, with the simulated
// rebooter, instead of the program when the program was started as a
// simulated node's daemon or request-reboot. Call it first in main or
// TestMain: simulated nodes run their daemon by running their program again.
func MaybeRunDaemon() {
	if os.Getenv(DaemonEnv) == "" {
		return
	}
	code := cli.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr, cli.Hooks{Rebooter: Rebooter{Out: os.Stdout}})
	os.Exit(code)
}
