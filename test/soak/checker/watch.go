package checker

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Watch feeds the checker every change of Nodes, pools and
// NodeMaintenances until ctx ends, through informers of its own: they
// list again after a watch ends (an API server restarted), so a history
// has a gap there but goes on. It returns once the informers have synced.
func (c *Checker) Watch(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) error {
	informers, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("checker cache: %w", err)
	}
	feeds := []struct {
		obj  client.Object
		feed func(obj any, deleted bool)
	}{
		{&v1alpha1.MaintenancePool{}, func(obj any, deleted bool) {
			if p, ok := obj.(*v1alpha1.MaintenancePool); ok {
				c.Pool(p, deleted)
			}
		}},
		{&corev1.Node{}, func(obj any, deleted bool) {
			if n, ok := obj.(*corev1.Node); ok {
				c.Node(n, deleted)
			}
		}},
		{&v1alpha1.NodeMaintenance{}, func(obj any, deleted bool) {
			if nm, ok := obj.(*v1alpha1.NodeMaintenance); ok {
				c.Maintenance(nm, deleted)
			}
		}},
	}
	for _, f := range feeds {
		inf, err := informers.GetInformer(ctx, f.obj)
		if err != nil {
			return fmt.Errorf("checker informer for %T: %w", f.obj, err)
		}
		feed := f.feed
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { feed(obj, false) },
			UpdateFunc: func(_, obj any) { feed(obj, false) },
			DeleteFunc: func(obj any) {
				if gone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = gone.Obj
				}
				feed(obj, true)
			},
		}); err != nil {
			return fmt.Errorf("checker handler for %T: %w", f.obj, err)
		}
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		return fmt.Errorf("checker caches did not sync: %w", ctx.Err())
	}
	return nil
}
