package operator_test

import (
	goruntime "runtime"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// reportHeld reports, per object of raws, the heap held with the cache's
// default transform ("stripped": managed fields only) and with slim, the
// operator's.
func reportHeld(b *testing.B, raws [][]byte, decoder runtime.Decoder, newStore func() toolscache.Store, slim toolscache.TransformFunc, unit string) {
	for _, tc := range []struct {
		name      string
		transform toolscache.TransformFunc
	}{
		{"stripped", cache.TransformStripManagedFields()},
		{"slim", slim},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportMetric(heapHeld(b, raws, decoder, tc.transform, newStore), unit)
		})
	}
}

// heapHeld returns the heap bytes each object holds once raws are decoded
// as an informer decodes them, transformed and stored in a new store.
func heapHeld(b *testing.B, raws [][]byte, decoder runtime.Decoder, transform toolscache.TransformFunc, newStore func() toolscache.Store) float64 {
	b.Helper()
	var held float64
	for b.Loop() {
		store := newStore()
		var before, after goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&before)
		for _, raw := range raws {
			decoded, _, err := decoder.Decode(raw, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			obj, err := transform(decoded)
			if err != nil {
				b.Fatal(err)
			}
			if err := store.Add(obj); err != nil {
				b.Fatal(err)
			}
		}
		goruntime.GC()
		goruntime.ReadMemStats(&after)
		held = float64(after.HeapAlloc-before.HeapAlloc) / float64(len(raws))
		goruntime.KeepAlive(store)
	}
	return held
}
