package maintenance_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// The daemon watches no NodeMaintenance: it learns of its node's from the
// operator, on the Node (protocol.APIRequests). The operator names a new
// request, never a refused one, replaces a garbled list, and drops a
// deleted request, which the daemon then cancels.
func TestOperatorNamesTheNodesAPIRequestsOnIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(bed.Client.Create(ctx, gen.Pool("named", intstr.FromInt32(1)))).To(Succeed())
	node := harness.CreateNodes(t, bed, "named", "named", 1)[0]
	harness.StartOperator(t, bed)
	named := func(g Gomega) string { return harness.GetNode(g, bed, node).Annotations[protocol.APIRequests] }

	first := newMaintenance("named-first", node)
	g.Expect(bed.Client.Create(ctx, first)).To(Succeed())
	want := protocol.Encode([]protocol.APIRequest{{Name: first.Name, UID: first.UID}})
	g.Eventually(named, timeout).Should(Equal(want))

	// A second open request is refused as a duplicate: never named.
	g.Expect(bed.Client.Create(ctx, newMaintenance("named-second", node))).To(Succeed())
	g.Eventually(func(g Gomega) v1alpha1.Phase { return harness.GetMaintenance(g, bed, "named-second").Status.Phase }, timeout).
		Should(Equal(v1alpha1.PhaseFailed))
	g.Expect(named(g)).To(Equal(want))

	// A list a person garbled is replaced.
	setNamed := func(v string) {
		patch := protocol.Encode(map[string]any{"metadata": map[string]any{"annotations": map[string]string{protocol.APIRequests: v}}})
		n := harness.GetNode(g, bed, node)
		g.Expect(bed.Client.Patch(ctx, n, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
	}
	setNamed("garbage")
	g.Eventually(named, timeout).Should(Equal(want))

	// Deleted: dropped, and an empty list written, not the annotation
	// removed (no annotation tells the daemon nothing).
	g.Expect(bed.Client.Delete(ctx, first)).To(Succeed())
	g.Eventually(named, timeout).Should(Equal("[]"))
}
