package main

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/test/sim"
)

// optOutReason is what the demo writes on the node it holds back.
const optOutReason = "demo: a person holds this node until the rest of its pool is done"

// holdOne opts the last node of the rolled-out pool out with
// kmaint.io/do-not-disrupt before the rollout starts: the live view shows
// it waiting (DoNotDisrupt) while the others pass it, and once every other
// node of the pool runs the new config the demo lifts it, as the person
// would, and it reboots last. It returns the node, or "" for a pool of one.
func holdOne(ctx context.Context, w *watcher, kube client.Client, pool sim.PoolSpec, out io.Writer) (string, error) {
	if pool.Nodes < 2 {
		return "", nil
	}
	held := fmt.Sprintf("%s-%03d", pool.Name, pool.Nodes-1)
	if err := setOptOut(ctx, kube, held, true); err != nil {
		return "", err
	}
	fmt.Fprintf(out, "  opt-out kubectl annotate node %s %s=%q: it waits while the rest of %s reboots, then the demo removes it\n",
		held, protocol.DoNotDisrupt, optOutReason, pool.Name)
	inf, err := w.cache.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return "", fmt.Errorf("watch nodes: %w", err)
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
		return "", fmt.Errorf("watch nodes: %w", err)
	}
	go func() {
		defer func() { _ = inf.RemoveEventHandler(reg) }()
		for {
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
			if othersDone(ctx, w, pool, held) {
				// A failure here leaves the node held; the view shows it.
				_ = setOptOut(ctx, kube, held, false)
				return
			}
		}
	}()
	return held, nil
}

// othersDone reports whether every node of the pool but held runs the new
// config and is back from its reboot.
func othersDone(ctx context.Context, w *watcher, pool sim.PoolSpec, held string) bool {
	var nodes corev1.NodeList
	if err := w.cache.List(ctx, &nodes, client.MatchingLabels{"pool": pool.Name}); err != nil {
		return false
	}
	for i := range nodes.Items {
		st, err := protocol.Read(&nodes.Items[i])
		if st.Name() == held {
			continue
		}
		if err != nil || st.CurrentConfig != newConfig || st.Unavailable() {
			return false
		}
	}
	return len(nodes.Items) == pool.Nodes
}

// setOptOut puts kmaint.io/do-not-disrupt on the node, or takes it off.
func setOptOut(ctx context.Context, kube client.Client, node string, on bool) error {
	value := fmt.Sprintf("%q", optOutReason)
	if !on {
		value = "null"
	}
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%s}}}`, protocol.DoNotDisrupt, value))
	n := &corev1.Node{}
	n.Name = node
	if err := kube.Patch(ctx, n, patch); err != nil {
		return fmt.Errorf("annotate node %s: %w", node, err)
	}
	return nil
}
