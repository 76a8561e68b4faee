package main

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/operator/api/v1alpha1"
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
}

func startWatcher(ctx context.Context, bed *testbed.Bed) (*watcher, error) {
	c, err := cache.New(bed.Config, cache.Options{Scheme: bed.Scheme})
	if err != nil {
		return nil, fmt.Errorf("watch the API server: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &watcher{cache: c, changed: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	poke := func() {
		select {
		case w.changed <- struct{}{}:
		default: // a poke is already waiting; one redraw covers both
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}
	for _, obj := range []client.Object{&corev1.Node{}, &v1alpha1.NodeMaintenance{}, &v1alpha1.MaintenancePool{}} {
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
	for _, l := range []client.ObjectList{&nodes, &nms, &pools} {
		if err := w.cache.List(ctx, l); err != nil {
			return s, fmt.Errorf("list %T: %w", l, err)
		}
	}
	s.nodes, s.maintenances, s.pools = nodes.Items, nms.Items, pools.Items
	return s, nil
}
