// Command cleanup removes what a killed run of the real test cluster left
// behind (processes, cgroups, its state directory): what the next Start of
// a cluster of the same name would do first. `make realcluster-clean` runs
// it for the clusters the tests start.
//
// Usage: go run ./test/realcluster/cleanup NAME...
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kmaint/kmaint/test/realcluster"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cleanup NAME... (the cluster names the tests use)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	failed := false
	for _, name := range os.Args[1:] {
		if err := realcluster.Cleanup(ctx, name, ""); err != nil {
			fmt.Fprintf(os.Stderr, "cleanup %s: %v\n", name, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}
