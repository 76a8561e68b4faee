package watcherr_test

import (
	"context"
	"errors"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/kmaint/kmaint/internal/watcherr"
)

// reported replaces the process's unhandled-error handlers (where client-go
// sends a failed watch) for the test, and returns what reaches them.
func reported(t *testing.T) *[]error {
	var got []error
	saved := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, err error, _ string, _ ...any) { got = append(got, err) }}
	t.Cleanup(func() { utilruntime.ErrorHandlers = saved })
	return &got
}

func TestAWatchThatFailsWhileItsInformerRunsIsReported(t *testing.T) {
	got := reported(t)
	failure := errors.New("connection refused")
	watcherr.Handler(context.Background(), &toolscache.Reflector{}, failure)
	if len(*got) != 1 || !errors.Is((*got)[0], failure) {
		t.Errorf("reported %v, want the watch's failure", *got)
	}
}

func TestAWatchCutByItsInformersStopIsNotReported(t *testing.T) {
	got := reported(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	watcherr.Handler(ctx, &toolscache.Reflector{}, context.Canceled)
	if len(*got) != 0 {
		t.Errorf("reported %v while the informer stops", *got)
	}
}
