package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/policies"
	"github.com/kmaint/kmaint/test/sim"
	"github.com/kmaint/kmaint/test/testbed"
)

// watcher keeps what a person with kubectl would see, Nodes,
// NodeMaintenances and MaintenancePools, in an informer cache, and pokes
// changed whenever any of them changes.
type watcher struct {
	cache   cache.Cache
	changed chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}

	mu sync.Mutex
	// frag is each node's fragmentation as Prometheus has it, when the
	// demo watches it.
	frag map[string]float64
}

func startWatcher(ctx context.Context, bed *testbed.Bed) (*watcher, error) {
	c, err := cache.New(bed.Config, cache.Options{Scheme: bed.Scheme})
	if err != nil {
		return nil, fmt.Errorf("watch the API server: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &watcher{cache: c, changed: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.poke() },
		UpdateFunc: func(any, any) { w.poke() },
		DeleteFunc: func(any) { w.poke() },
	}
	for _, obj := range []client.Object{&corev1.Node{}, &v1alpha1.NodeMaintenance{}, &v1alpha1.MaintenancePool{}, &v1alpha1.RebootPolicy{}} {
		inf, err := c.GetInformer(ctx, obj)
		if err == nil {
			_, err = inf.AddEventHandler(handler)
		}
		if err != nil {
			cancel()
			return nil, fmt.Errorf("watch %T: %w", obj, err)
		}
	}
	go func() {
		defer close(w.done)
		_ = c.Start(ctx) // returns when ctx ends
	}()
	if !c.WaitForCacheSync(ctx) {
		w.stop()
		return nil, errors.New("watch the API server: caches did not sync")
	}
	return w, nil
}

func (w *watcher) poke() {
	select {
	case w.changed <- struct{}{}:
	default: // a poke is already waiting; one redraw covers both
	}
}

// watchFragmentation asks Prometheus for every node's fragmentation every
// interval, as a dashboard would, until ctx ends. instances maps instance
// labels to node names.
func (w *watcher) watchFragmentation(ctx context.Context, prom policies.Querier, instances map[string]string, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		v, err := prom.Query(ctx, sim.FragmentationRecord, time.Now())
		if err == nil {
			frag := map[string]float64{}
			for _, s := range v {
				if node, ok := instances[string(s.Metric["instance"])]; ok {
					frag[node] = float64(s.Value)
				}
			}
			w.mu.Lock()
			changed := !maps.Equal(frag, w.frag)
			w.frag = frag
			w.mu.Unlock()
			if changed {
				w.poke()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// stop stops the watches and waits until they have stopped.
func (w *watcher) stop() {
	w.cancel()
	<-w.done
}

// state reads the cluster as the cache has it now.
func (w *watcher) state(ctx context.Context) (clusterState, error) {
	var s clusterState
	var nodes corev1.NodeList
	var nms v1alpha1.NodeMaintenanceList
	var pools v1alpha1.MaintenancePoolList
	var rps v1alpha1.RebootPolicyList
	for _, l := range []client.ObjectList{&nodes, &nms, &pools, &rps} {
		if err := w.cache.List(ctx, l); err != nil {
			return s, fmt.Errorf("list %T: %w", l, err)
		}
	}
	s.nodes, s.maintenances, s.pools, s.policies = nodes.Items, nms.Items, pools.Items, rps.Items
	w.mu.Lock()
	s.frag = maps.Clone(w.frag)
	w.mu.Unlock()
	return s, nil
}
