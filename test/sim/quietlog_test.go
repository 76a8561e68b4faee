package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
)

// TestQuietAfterStopDropsOnlyWhatTheStopCaused: a request cut short by
// the daemon's stop is not an error worth a line; the same error before
// the stop is, and so is any other error after it.
func TestQuietAfterStopDropsOnlyWhatTheStopCaused(t *testing.T) {
	var lines []string
	base := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{})
	ctx, stop := context.WithCancel(context.Background())
	log := quietAfterStop(base, ctx).WithName("daemon").WithValues("node", "n1")
	canceled := fmt.Errorf("patch annotations of node n1: %w", context.Canceled)

	log.Error(canceled, "Reconciler error", "step", "before the stop")
	stop()
	log.Error(canceled, "Reconciler error", "step", "after the stop")
	log.Error(errors.New("conflict"), "Reconciler error", "step", "another error after the stop")

	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%v", len(lines), lines)
	}
	for _, want := range []string{"before the stop", "another error after the stop"} {
		if !slices.ContainsFunc(lines, func(l string) bool {
			return strings.Contains(l, want) && strings.Contains(l, "daemon") && strings.Contains(l, "n1")
		}) {
			t.Errorf("no line %q with the logger's name and values in %v", want, lines)
		}
	}
}
