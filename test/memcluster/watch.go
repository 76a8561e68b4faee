package memcluster

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kmaint/kmaint/internal/eventrec"
	"github.com/kmaint/kmaint/operator/enqueue"
)

// Watch has each of a controller's watches told of every change of its
// kind from now on, as controller-runtime's source.Kind tells it: an event
// that passes the watch's predicates goes to its handler, which adds to q.
// It runs in the writer's goroutine, after the store holds the change, and
// its time counts as Handling: the operator's work.
func (c *Cluster) Watch(ctx context.Context, q enqueue.Queue, watches ...enqueue.Watch) error {
	for _, w := range watches {
		gvk, err := c.gvk(w.Object)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.handlers[gvk] = append(c.handlers[gvk], watchHandler{ctx: ctx, q: q, w: w})
		c.mu.Unlock()
	}
	return nil
}

// Queue returns a controller's work queue, for its watches' handlers to add
// to; the benchmark reconciles as it pleases, and nothing takes from it.
// It is shut down when tb ends.
func Queue(tb testing.TB) enqueue.Queue {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	tb.Cleanup(q.ShutDown)
	return q
}

// watchHandler turns an informer's notifications into a watch's events.
type watchHandler struct {
	ctx context.Context
	q   enqueue.Queue
	w   enqueue.Watch
}

func (h watchHandler) OnAdd(obj any, _ bool) {
	e := event.CreateEvent{Object: obj.(client.Object)}
	for _, p := range h.w.Predicates {
		if !p.Create(e) {
			return
		}
	}
	h.w.Handler.Create(h.ctx, e, h.q)
}

func (h watchHandler) OnUpdate(old, obj any) {
	e := event.UpdateEvent{ObjectOld: old.(client.Object), ObjectNew: obj.(client.Object)}
	for _, p := range h.w.Predicates {
		if !p.Update(e) {
			return
		}
	}
	h.w.Handler.Update(h.ctx, e, h.q)
}

func (h watchHandler) OnDelete(obj any) {
	e := event.DeleteEvent{Object: obj.(client.Object)}
	for _, p := range h.w.Predicates {
		if !p.Delete(e) {
			return
		}
	}
	h.w.Handler.Delete(h.ctx, e, h.q)
}

// Recorder returns the recorder of Kubernetes Events the operator gives
// controller (package eventrec), counting each event it is given
// (Recorded). It does in the caller's goroutine what the operator's does
// (the note formatted, the Event made, a repeat folded) but writes nothing:
// the Events, which the operator's sender writes from goroutines of its
// own, are counted, and the rare repeat it folds with them.
func (c *Cluster) Recorder(controller string) events.EventRecorder {
	sender := eventrec.New(nil, c.scheme, logr.Discard(), eventrec.WithQueue(0))
	return recorder{c: c, real: sender.Recorder(controller)}
}

type recorder struct {
	c    *Cluster
	real events.EventRecorder
}

func (r recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.c.recorded.Add(1)
	r.real.Eventf(regarding, related, eventtype, reason, action, note, args...)
}
