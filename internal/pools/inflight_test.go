package pools_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/test/gen"
)

// A node in flight stays with the pool that admitted it while that very
// pool exists, whatever its labels say; before its admission and after
// its maintenance its labels say where it is.
func TestANodeInFlightStaysWithThePoolThatAdmittedIt(t *testing.T) {
	a, b := gen.Pool("a", intstr.FromInt32(1)), gen.Pool("b", intstr.FromInt32(1))
	a.UID, b.UID = "uid-a", "uid-b"
	both := pools.Selectors([]v1alpha1.MaintenancePool{*a, *b})
	onlyB := pools.Selectors([]v1alpha1.MaintenancePool{*b})
	remade := a.DeepCopy()
	remade.UID = "uid-a-again"
	aRemade := pools.Selectors([]v1alpha1.MaintenancePool{*remade, *b})
	at := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	admitted := func(pool string, uid types.UID) protocol.Transition {
		return protocol.Admit(protocol.Admission{BootID: "boot-1", Requests: []string{"r1"}, Time: at, Pool: pool, PoolUID: uid})
	}
	settling := func(pool string, uid types.UID) protocol.Transition {
		return protocol.UpdateSettle(protocol.Settle{BootID: "boot-2", RebootedBoot: "boot-1", Pool: pool, PoolUID: uid, Since: at, Until: at.Add(time.Minute)})
	}
	cases := map[string]struct {
		labels map[string]string
		record protocol.Transition
		sel    pools.Selection
		want   []string
	}{
		"waiting: its labels":                           {labels: map[string]string{"pool": "b"}, sel: both, want: []string{"b"}},
		"admitted by a, relabelled into b":              {labels: map[string]string{"pool": "b"}, record: admitted("a", "uid-a"), sel: both, want: []string{"a"}},
		"admitted by a, unlabelled":                     {record: admitted("a", "uid-a"), sel: both, want: []string{"a"}},
		"admitted by a, in a and b":                     {labels: map[string]string{"pool": "a", "zone": "b"}, record: admitted("a", "uid-a"), sel: both, want: []string{"a"}},
		"settling for a, relabelled into b":             {labels: map[string]string{"pool": "b"}, record: settling("a", "uid-a"), sel: both, want: []string{"a"}},
		"admitted by the default pool, labelled into b": {labels: map[string]string{"pool": "b"}, record: admitted(v1alpha1.DefaultPoolName, ""), sel: both, want: []string{v1alpha1.DefaultPoolName}},
		"admitted by a, a deleted":                      {labels: map[string]string{"pool": "b"}, record: admitted("a", "uid-a"), sel: onlyB, want: []string{"b"}},
		"admitted by a, a deleted and made again":       {labels: map[string]string{"pool": "b"}, record: admitted("a", "uid-a"), sel: aRemade, want: []string{"b"}},
		"an admission that names no UID: by its name":   {labels: map[string]string{"pool": "b"}, record: admitted("a", ""), sel: both, want: []string{"a"}},
		"an admission that names no pool: its labels":   {labels: map[string]string{"pool": "b"}, record: admitted("", ""), sel: both, want: []string{"b"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			node := gen.Node("n1", gen.BootID("boot-1"))
			node.Labels = tc.labels
			if tc.record != nil {
				tc.record.Apply(node)
			}
			g.Expect(pools.Of(node, tc.sel)).To(Equal(tc.want))
			s, err := protocol.Read(node)
			g.Expect(err).NotTo(HaveOccurred())
			name, uid := s.InFlightPool()
			g.Expect(pools.OfInFlight(node, tc.sel, name, uid)).To(Equal(tc.want), "OfInFlight of the node read")
		})
	}

	// An admission that cannot be read names no pool: the node is where
	// its labels put it, and unreadable there (never admitted, approved
	// or completed).
	node := gen.Node("n1", gen.Labels("pool", "b"))
	node.Annotations[protocol.Admitted] = `{"pool":"a",`
	NewWithT(t).Expect(pools.Of(node, both)).To(Equal([]string{"b"}))
}
