package sim

import (
	"context"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kmaint/kmaint/operator"
)

// Operator is a running kmaint operator that can be stopped at any moment,
// as a pod that is killed or evicted would be, and started again.
type Operator struct {
	cancel context.CancelFunc
	// stopped is closed when the manager has returned, with err set.
	stopped chan struct{}
	err     error
}

// StartOperator starts an operator against cfg. Metrics and probes are off
// unless opts turns them on.
func StartOperator(ctx context.Context, cfg *rest.Config, opts operator.Options) (*Operator, error) {
	if opts.MetricsAddr == "" {
		opts.MetricsAddr = "0"
	}
	if opts.ProbeAddr == "" {
		opts.ProbeAddr = "0"
	}
	if opts.DrainPollInterval == 0 {
		opts.DrainPollInterval = 200 * time.Millisecond
	}
	opts.AllowDuplicateControllerNames = true
	ctx, cancel := context.WithCancel(ctx)
	mgr, err := operator.NewManager(ctx, cfg, opts)
	if err != nil {
		cancel()
		return nil, err
	}
	o := &Operator{cancel: cancel, stopped: make(chan struct{})}
	go func() {
		o.err = mgr.Start(ctx)
		close(o.stopped)
	}()
	return o, nil
}

// Running reports whether the operator is still running: false once it
// stopped, whether it was asked to or failed on its own.
func (o *Operator) Running() bool {
	select {
	case <-o.stopped:
		return false
	default:
		return true
	}
}

// Stop stops the operator and waits until it has stopped.
func (o *Operator) Stop() error {
	o.cancel()
	<-o.stopped
	return o.err
}
