package poolnodes_test

import (
	"context"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/operator/poolnodes"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/testbed"
)

// bed is the real API server Patch writes to.
var bed *testbed.Bed

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &bed)) }

// The API server answers a Node's patch with the whole Node, which the
// gate keeps for the rest of its pass: a pass that writes every node of a
// pool (a new desiredConfig) held, at once, all that anyone who may patch
// Nodes padded them with (about 500 MiB at 2000 nodes, under a key of
// their own that admission lets through). Patch keeps of the answer's
// annotations what the cache keeps, and what it wrote.
func TestPatchKeepsWhatTheCacheKeeps(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pad := strings.Repeat("x", 120<<10)
	node := gen.Node("patched", gen.Annotations("example.com/pad", pad, protocol.DoNotDisrupt, pad, protocol.State, `{"phase":"idle"}`))
	g.Expect(gen.CreateNode(ctx, bed.Client, node)).To(Succeed())

	written, err := poolnodes.Patch(ctx, bed.Client, node, true, protocol.SetDesiredConfig("v2"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(written.Annotations).To(Equal(map[string]string{
		protocol.DesiredConfig: "v2", protocol.State: `{"phase":"idle"}`, protocol.DoNotDisrupt: protocol.CutForeign(pad),
	}))
	g.Expect(written.ResourceVersion).NotTo(Equal(node.ResourceVersion), "the node as written")
}
