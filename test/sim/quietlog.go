package sim

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
)

// quietAfterStop is a daemon's logger that drops the errors its own stop
// causes: a simulated reboot (or the cluster's Stop) cancels the daemon's
// context while it is patching its node or writing an event, and every
// such request then fails with context.Canceled. Those lines, two or three
// per reboot, would bury whatever else goes wrong in a rollout of
// thousands of nodes; any other error, and any error before the stop, is
// logged as it was.
func quietAfterStop(log logr.Logger, ctx context.Context) logr.Logger {
	if log.GetSink() == nil {
		return log
	}
	return log.WithSink(stopFilter{LogSink: log.GetSink(), ctx: ctx})
}

type stopFilter struct {
	logr.LogSink
	ctx context.Context
}

func (s stopFilter) Error(err error, msg string, keysAndValues ...any) {
	if s.ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return
	}
	s.LogSink.Error(err, msg, keysAndValues...)
}

func (s stopFilter) WithValues(keysAndValues ...any) logr.LogSink {
	return stopFilter{LogSink: s.LogSink.WithValues(keysAndValues...), ctx: s.ctx}
}

func (s stopFilter) WithName(name string) logr.LogSink {
	return stopFilter{LogSink: s.LogSink.WithName(name), ctx: s.ctx}
}

// WithCallDepth keeps the caller's file and line right when the sink
// reports them.
func (s stopFilter) WithCallDepth(depth int) logr.LogSink {
	if d, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return stopFilter{LogSink: d.WithCallDepth(depth), ctx: s.ctx}
	}
	return s
}

var (
	_ logr.LogSink          = stopFilter{}
	_ logr.CallDepthLogSink = stopFilter{}
)
