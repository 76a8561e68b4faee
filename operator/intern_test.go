package operator

import (
	"fmt"
	"slices"
	"testing"
)

func TestInternerBoundsItsTable(t *testing.T) {
	in := newInterner()
	for i := range maxInterned + 10 {
		in.str(fmt.Sprint("node-", i))
	}
	if n := len(in.strings); n > maxInterned {
		t.Fatalf("the table holds %d strings, more than its bound %d", n, maxInterned)
	}
	if got := in.str("node-7"); got != "node-7" {
		t.Errorf("str(node-7) = %q after the table was dropped", got)
	}
}

func TestMapOf(t *testing.T) {
	in := newInterner()
	m := map[string]string{"a": "1", "b": "2"}
	if got := in.mapOf(m, all, true); len(got) != 2 || got["a"] != "1" || got["b"] != "2" {
		t.Errorf("mapOf(m, all) = %v, want m's entries", got)
	}
	if got := in.mapOf(m, only("b", "c"), false); len(got) != 1 || got["b"] != "2" || len(m) != 2 {
		t.Errorf("mapOf(m, only(b, c)) = %v (m %v), want b alone and m unchanged", got, m)
	}
	if got := in.mapOf(m, only("c"), false); got != nil {
		t.Errorf("mapOf(m, only(c)) = %v, want nil", got)
	}
	if got := in.mapOf(nil, all, true); got != nil {
		t.Errorf("mapOf(nil, all) = %v, want nil", got)
	}
	ids := newInterner()
	ids.mapOf(map[string]string{"kmaint.io/request-id": "3f1c"}, all, false)
	if _, ok := ids.strings["3f1c"]; ok || len(ids.strings) != 1 {
		t.Errorf("the table holds %v; a value not shared must not fill it", ids.strings)
	}
}

// only keeps the keys named, for interner.mapOf.
func only(keys ...string) func(string) bool {
	return func(k string) bool { return slices.Contains(keys, k) }
}
