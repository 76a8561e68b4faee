package cacheread

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// All returns every object the cache holds of example's kind, as the
// pointers the cache keeps: read them, never change them. It waits, as a
// cached List does, until the cache has synced that kind.
func All[T client.Object](ctx context.Context, informers cache.Informers, example T) ([]T, error) {
	store, err := storeOf(ctx, informers, example)
	if err != nil {
		return nil, err
	}
	items := store.List()
	out := make([]T, 0, len(items))
	for _, item := range items {
		obj, ok := item.(T)
		if !ok {
			return nil, fmt.Errorf("the cache of %T holds a %T", example, item)
		}
		out = append(out, obj)
	}
	return out, nil
}

// Index reads the objects of example's kind by an index of the cache's
// (IndexField) in place: By(value) finds what a cached List with
// client.MatchingFields{field: value} finds in every namespace, as the
// pointers the cache keeps. The gate asks it once per waiting node at each
// reconcile, where a List's reflection, slice and informer lookup were most
// of what it spent on a node. The index's names are controller-runtime's:
// "field:" and the field, values prefixed with their namespace, or
// "__all_namespaces/" for all (its cache_reader.go). A controller-runtime
// that named them otherwise would find nothing here, silently: the gate's
// tests of policy windows and ignoreWindows (which need a node's
// NodeMaintenances found) fail then, against a real cache.
type Index[T client.Object] struct {
	indexer toolscache.Indexer
	name    string
}

// IndexOf returns the index of field on example's kind. It waits, as a
// cached List does, until the cache has synced that kind.
func IndexOf[T client.Object](ctx context.Context, informers cache.Informers, example T, field string) (Index[T], error) {
	inf, err := informers.GetInformer(ctx, example)
	if err != nil {
		return Index[T]{}, fmt.Errorf("get the informer of %T: %w", example, err)
	}
	withIndexer, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return Index[T]{}, fmt.Errorf("the informer of %T (%T) has no indexer", example, inf)
	}
	return Index[T]{indexer: withIndexer.GetIndexer(), name: "field:" + field}, nil
}

// By returns the objects whose field has value: read them, never change
// them.
func (x Index[T]) By(value string) ([]T, error) {
	items, err := x.indexer.ByIndex(x.name, "__all_namespaces/"+value)
	if err != nil {
		return nil, fmt.Errorf("read the cache by %s: %w", x.name, err)
	}
	out := make([]T, 0, len(items))
	for _, item := range items {
		obj, ok := item.(T)
		if !ok {
			var want T
			return nil, fmt.Errorf("the index %s holds a %T, not a %T", x.name, item, want)
		}
		out = append(out, obj)
	}
	return out, nil
}

// Getter returns a function that reads a cluster-scoped object of
// example's kind by name, as the pointer the cache keeps (nil when the cache
// holds none): read it, never change it. It waits, as a cached List does,
// until the cache has synced that kind.
func Getter[T client.Object](ctx context.Context, informers cache.Informers, example T) (func(name string) (T, error), error) {
	store, err := storeOf(ctx, informers, example)
	if err != nil {
		return nil, err
	}
	return func(name string) (T, error) {
		var none T
		item, ok, err := store.GetByKey(name)
		if err != nil || !ok {
			return none, err
		}
		obj, isT := item.(T)
		if !isT {
			return none, fmt.Errorf("the cache of %T holds a %T", example, item)
		}
		return obj, nil
	}, nil
}

// Count returns how many objects of example's kind the cache holds.
func Count(ctx context.Context, informers cache.Informers, example client.Object) (int, error) {
	store, err := storeOf(ctx, informers, example)
	if err != nil {
		return 0, err
	}
	return len(store.ListKeys()), nil
}

func storeOf(ctx context.Context, informers cache.Informers, example client.Object) (toolscache.Store, error) {
	inf, err := informers.GetInformer(ctx, example)
	if err != nil {
		return nil, fmt.Errorf("get the informer of %T: %w", example, err)
	}
	withStore, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		return nil, fmt.Errorf("the informer of %T (%T) has no store", example, inf)
	}
	return withStore.GetStore(), nil
}
