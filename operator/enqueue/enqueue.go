package enqueue

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Queue is the queue a handler adds requests to.
type Queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// Func adds to q the requests that the event of objs calls for: one object
// for a create, delete or generic event, the old and the new for an update.
type Func func(ctx context.Context, q Queue, objs ...client.Object)

// Objects returns the handler that calls add with each event's objects.
func Objects(add Func) handler.Funcs {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q Queue) { add(ctx, q, e.Object) },
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q Queue) { add(ctx, q, e.ObjectOld, e.ObjectNew) },
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q Queue) { add(ctx, q, e.Object) },
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q Queue) {
			add(ctx, q, e.Object)
		},
	}
}
