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
