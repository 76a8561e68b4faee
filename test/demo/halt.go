package main

import (
	"context"
	"fmt"
	"io"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/test/sim"
)

// The halt part of the demo: the rolled-out pool guards its rollout. Each
// rebooted node keeps its slot for a settle time while a health check on
// the real Prometheus watches it; one node comes back unhealthy (its
// exporter reports sim_node_unhealthy 1), and the pool halts after it:
// no node is admitted, the view says which node and check. A moment later
// the node's series recovers, and the demo resumes the pool as a person
// would, with kubectl kmaint resume's code; the rollout goes on.

// The guard's timings, made to fit a demo.
const (
	haltSettle   = 3 * time.Second
	haltInterval = v1alpha1.MinHealthCheckInterval
	// haltShown is how long the demo leaves the pool halted before the
	// series recovers, for the person watching to read the view.
	haltShown = 4 * time.Second
	// recoveredShown is how long the series is healthy before the demo
	// resumes the pool: a pool that resumes Manual stays halted meanwhile.
	recoveredShown = 2 * haltInterval
	// haltCheck names the demo's health check.
	haltCheck = "node-healthy"
)

// haltPlan is the halt part of the demo.
type haltPlan struct {
	pool, node string
}

// planHalt guards the rolled-out pool and picks its first node to come
// back unhealthy; nil when the pool has no node to spare from the opt-out.
func planHalt(pools []sim.PoolSpec) *haltPlan {
	i := min(1, len(pools)-1)
	p := &pools[i]
	if p.Nodes < 2 {
		return nil
	}
	*p = p.Guarded(haltCheck, haltSettle)
	p.HealthChecks.Resume = v1alpha1.ResumeManual
	return &haltPlan{pool: p.Name, node: fmt.Sprintf("%s-%03d", p.Name, 0)}
}

// arm makes the node come back from its reboot unhealthy: before the
// rollout starts, so that its first reboot does.
func (h *haltPlan) arm(c *sim.Cluster) error {
	return c.SetUnhealthyAfterReboot(h.node, true)
}

// describe says what the demo does.
func (h *haltPlan) describe(out io.Writer) {
	fmt.Fprintf(out, "  halt      MaintenancePool %s: settleTime %s, health check %s `%s == 1` every %s, resume Manual;\n"+
		"            %s comes back unhealthy, the pool halts after it; the demo clears the series once it has, then resumes\n"+
		"            the pool as a person would (kubectl kmaint resume %s)\n",
		h.pool, haltSettle, haltCheck, sim.UnhealthySeries, haltInterval, h.node, h.pool)
}

// drive waits for the pool to halt, lets it be seen, clears the node's
// series, and resumes the pool. A failure leaves the pool halted; the view
// shows it, and the demo runs into its end.
func (h *haltPlan) drive(ctx context.Context, w *watcher, kube client.Client, c *sim.Cluster) {
	if !h.waitFor(ctx, w, func(p *v1alpha1.MaintenancePool) bool { return p.Status.Halt != nil && len(p.Status.Halt.Nodes) > 0 }) {
		return
	}
	if !sleep(ctx, haltShown) {
		return
	}
	if err := c.SetHealthy(h.node); err != nil {
		return
	}
	if !sleep(ctx, recoveredShown) {
		return
	}
	_ = cmd.Resume(ctx, kube, io.Discard, h.pool)
}

// waitFor waits until the pool, as the watcher's cache has it, is as ok
// says; false when ctx ended first.
func (h *haltPlan) waitFor(ctx context.Context, w *watcher, ok func(*v1alpha1.MaintenancePool) bool) bool {
	inf, err := w.cache.GetInformer(ctx, &v1alpha1.MaintenancePool{})
	if err != nil {
		return false
	}
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { poke() }, UpdateFunc: func(any, any) { poke() },
	})
	if err != nil {
		return false
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	for {
		p := &v1alpha1.MaintenancePool{}
		if err := w.cache.Get(ctx, client.ObjectKey{Name: h.pool}, p); err == nil && ok(p) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		}
	}
}

// sleep waits for d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
