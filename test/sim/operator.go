package sim

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kmaint/kmaint/operator"
)

// Operator is a running kmaint operator that can be stopped at any moment,
// as a pod that is killed or evicted would be, and started again.
type Operator struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
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
	o := &Operator{cancel: cancel, done: make(chan error, 1)}
	go func() { o.done <- mgr.Start(ctx) }()
	return o, nil
}

// Stop stops the operator and waits until it has stopped.
func (o *Operator) Stop() error {
	o.once.Do(func() {
		o.cancel()
		o.err = <-o.done
	})
	return o.err
}
