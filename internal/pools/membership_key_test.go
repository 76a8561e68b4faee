package pools_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/test/gen"
)

// Two selections share a key only when they put every node in the same
// pools.
func TestSelectionKey(t *testing.T) {
	a, b := gen.Pool("a", intstr.FromInt32(1)), gen.Pool("b", intstr.FromInt32(1))
	key := func(ps ...*v1alpha1.MaintenancePool) string {
		var items []v1alpha1.MaintenancePool
		for _, p := range ps {
			items = append(items, *p)
		}
		return pools.Selectors(items).Key()
	}
	base := key(a, b)
	if key(b, a) != base {
		t.Error("the order of the pools changes the key")
	}
	a2 := a.DeepCopy()
	a2.Spec.NodeSelector.MatchLabels["zone"] = "z1"
	none, all := a.DeepCopy(), a.DeepCopy()
	none.Spec.NodeSelector = nil
	all.Spec.NodeSelector = &v1alpha1.LabelSelector{}
	renamed := b.DeepCopy()
	renamed.Name = "c"
	remade := a.DeepCopy()
	remade.UID = "another"
	for name, other := range map[string]string{
		"a selector changed": key(a2, b), "a pool gone": key(a), "a pool renamed": key(a, renamed),
		"no selector": key(none, b), "an empty selector": key(all, b),
		// A node in flight stays with the pool that admitted it while the
		// object is the same: the same pool made again is another.
		"a pool made again": key(remade, b),
	} {
		if other == base {
			t.Errorf("%s: the key is the same", name)
		}
	}
	if key(none, b) == key(all, b) {
		t.Error("a pool that selects nothing and one that selects everything share a key")
	}
}
