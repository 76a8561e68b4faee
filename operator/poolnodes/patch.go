package poolnodes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
)

// Patch applies a protocol transition to a copy of the cached node and
// patches the difference; it returns the node as written, with the
// annotations the cache would keep of it (protocol.Kept). With lock, the
// patch fails with a conflict if the node changed since it was read, so
// that a decision taken on an old copy is never applied.
func Patch(ctx context.Context, c client.Client, cached *corev1.Node, lock bool, t protocol.Transition) (*corev1.Node, error) {
	node := cached.DeepCopy()
	t.Apply(node)
	var patch client.Patch
	if lock {
		patch = client.MergeFromWithOptions(cached, client.MergeFromWithOptimisticLock{})
	} else {
		patch = client.MergeFrom(cached)
	}
	if err := c.Patch(ctx, node, patch); err != nil {
		return nil, fmt.Errorf("patch node %s: %w", node.Name, err)
	}
	// The API server answers with the whole Node, and the caller keeps it
	// for the rest of its pass: a pass that writes every node of a pool (a
	// new desiredConfig) would otherwise hold, at once, all that anyone
	// who may patch Nodes padded them with (BenchmarkPaddedNodes).
	node.Annotations = protocol.Kept(node, nil)
	return node, nil
}
