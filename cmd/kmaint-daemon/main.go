// Command kmaint-daemon is kmaint's node agent (`run`) and host-side API
// (`request-reboot <reason>`).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/kmaint/kmaint/daemon/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, cli.Hooks{})
	stop()
	os.Exit(code)
}
