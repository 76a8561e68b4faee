package gate

import (
	"context"
	"sync"

	"github.com/kmaint/kmaint/operator/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/drain"
)

// drainStepParallelism bounds the drain steps a reconcile runs at once.
const drainStepParallelism = 8

// drainStep is one node's drain step in a reconcile: whether its marks
// are on (only then does it drain), and what the step found.
type drainStep struct {
	node     string
	marked   bool
	progress drain.Progress
	err      error
}

// stepDrains steps the drains of the marked nodes, up to
// drainStepParallelism at once. One after another, a pool draining 25
// nodes spent each reconcile waiting on 25 pod lists and their evictions
// in turn, and a slot freed meanwhile waited for that reconcile to end
// before the next node was admitted. Steps touch only the API server, not
// the reconcile's state; their results are acted on in order afterwards.
func (r *Reconciler) stepDrains(ctx context.Context, opts v1alpha1.DrainOptions, steps []drainStep) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, drainStepParallelism)
	for i := range steps {
		if !steps[i].marked {
			continue
		}
		wg.Add(1)
		slots <- struct{}{}
		go func(s *drainStep) {
			defer wg.Done()
			defer func() { <-slots }()
			s.progress, s.err = r.Drainer.Step(ctx, s.node, opts)
		}(&steps[i])
	}
	wg.Wait()
}
