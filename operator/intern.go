package operator

import "sync"

// maxInterned bounds the strings an interner keeps. A cluster's label keys,
// label values, node names, sources and policies are a few thousand; the
// bound is well above that, and only keeps a cluster whose nodes come and go
// for years from growing the table without end.
const maxInterned = 1 << 16

// interner hands out one copy of each string it is given. Decoding gives
// every cached object its own copy of each string: 5000 Nodes carry the same
// 25 label keys and mostly the same values, and twelve finished
// NodeMaintenances per node repeat the node's name, their source and their
// phase. Measured together with the fields the transforms drop, a cached
// Node went from about 6.3 KB to 4.4 KB (3.5 KB with its Ready condition in
// a slice of its own, slim.go; 4.0 KB since it keeps its other four
// conditions' type, status and transition for node condition policies)
// and a finished record from 1.1 KB to 0.95 KB (BenchmarkCachedNode,
// BenchmarkCachedFinishedMaintenance).
//
// Sharing is safe because Go strings cannot change. The table is dropped
// when full rather than pruned: the strings already shared stay shared, and
// new ones are shared from then on.
type interner struct {
	mu      sync.Mutex
	strings map[string]string
}

func newInterner() *interner {
	return &interner{strings: map[string]string{}}
}

// str returns the shared copy of s.
func (in *interner) str(s string) string {
	if s == "" {
		return s
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if shared, ok := in.strings[s]; ok {
		return shared
	}
	if len(in.strings) >= maxInterned {
		clear(in.strings)
	}
	in.strings[s] = s
	return s
}

// mapOf returns the entries of m whose key keep accepts, with shared keys,
// and with shared values too when sharedValues is set (label values repeat
// between objects; request ids and daemon states do not, and would only fill
// the table). It returns nil when no entry is kept; m itself is not changed.
func (in *interner) mapOf(m map[string]string, keep func(key string) bool, sharedValues bool) map[string]string {
	kept := 0
	for k := range m {
		if keep(k) {
			kept++
		}
	}
	if kept == 0 {
		return nil
	}
	out := make(map[string]string, kept)
	for k, v := range m {
		if !keep(k) {
			continue
		}
		if sharedValues {
			v = in.str(v)
		}
		out[in.str(k)] = v
	}
	return out
}

// all keeps every key, for mapOf.
func all(string) bool { return true }
