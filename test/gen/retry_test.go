package gen

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The simulated kubelet tries a write again however often it fails at the
// longest delay, until its patience ends: wait.Backoff with a Cap stopped
// once the cap was reached, and a pod left Pending across an API server
// restart held its budget at zero evictions for good.
func TestTheKubeletTriesAgainPastItsLongestDelayUntilItsPatienceEnds(t *testing.T) {
	ctx := context.Background()
	refused := errors.New("connection refused")
	failures := 0
	err := retryFor(ctx, time.Millisecond, 2*time.Millisecond, time.Minute, func() error {
		if failures < 50 {
			failures++
			return refused
		}
		return nil
	})
	if err != nil || failures != 50 {
		t.Fatalf("after %d failures: %v; want success after 50", failures, err)
	}

	start := time.Now()
	err = retryFor(ctx, time.Millisecond, 2*time.Millisecond, 50*time.Millisecond, func() error { return refused })
	if !errors.Is(err, refused) || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("a write that always fails: %v after %s; want its error once the patience of 50ms ended", err, time.Since(start))
	}

	tries := 0
	gone := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")
	if err := retryFor(ctx, time.Millisecond, time.Millisecond, time.Minute, func() error { tries++; return gone }); !apierrors.IsNotFound(err) || tries != 1 {
		t.Fatalf("an object gone: %v after %d tries; want NotFound at once", err, tries)
	}
}
