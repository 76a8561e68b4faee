package enqueue

import (
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Watch is one of a controller's watches of a kind: the handler each
// change of it that passes the predicates is given. A controller lists its
// watches once, for its manager (Register) and for the benchmarks that
// tell it of changes without one (package memcluster), so that a
// benchmark's event runs the handlers the operator runs.
type Watch struct {
	Object     client.Object
	Handler    handler.TypedEventHandler[client.Object, reconcile.Request]
	Predicates []predicate.Predicate
}

// Register has b watch each of watches.
func Register(b *builder.Builder, watches []Watch) *builder.Builder {
	for _, w := range watches {
		b = b.Watches(w.Object, w.Handler, builder.WithPredicates(w.Predicates...))
	}
	return b
}
