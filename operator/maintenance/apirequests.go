package maintenance

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// apiRequestsFor returns the NodeMaintenances of a node (items, oldest
// first) that its daemon is to know of (protocol.APIRequests): those that
// start in the API, are not being deleted, and are open, or Failed while the
// node still shows them raised (a drain that failed leaves its request
// raised until the node reboots; the daemon must not take it for deleted).
func apiRequestsFor(items []v1alpha1.NodeMaintenance, f *protocol.NodeState) []protocol.APIRequest {
	reqs := []protocol.APIRequest{}
	for i := range items {
		nm := &items[i]
		if nm.Unreadable() != nil || nm.Spec.Source.RaisedOnNode() || nm.DeletionTimestamp != nil {
			continue
		}
		raised := f.Requested != nil && f.Requested.Has(string(nm.UID))
		if nm.Status.Phase == v1alpha1.PhaseSucceeded || nm.Status.Phase == v1alpha1.PhaseFailed && !raised {
			continue
		}
		reqs = append(reqs, protocol.APIRequest{Name: nm.Name, UID: nm.UID})
	}
	return reqs
}

// needsAPIRequestsWrite reports whether the node's APIRequests must be
// rewritten to want: when it cannot be read, names too few (a request the
// daemon does not know of yet), or names one that is gone or being deleted
// (a request the daemon must cancel). One that only finished is left until
// the next write: the daemon does nothing for it, and dropping it alone
// would cost a write of the Node, seen by every watcher of Nodes, at every
// reboot. live are the UIDs of the node's NodeMaintenances not being
// deleted; unreadable says the node's annotation cannot be read.
func needsAPIRequestsWrite(have []protocol.APIRequest, known, unreadable bool, want []protocol.APIRequest, live map[types.UID]bool) bool {
	switch {
	case unreadable:
		return true
	case !known:
		return len(want) > 0
	}
	for _, w := range want {
		if !slices.Contains(have, w) {
			return true
		}
	}
	return slices.ContainsFunc(have, func(h protocol.APIRequest) bool { return !live[h.UID] })
}

// offerAPIRequests names on the node the NodeMaintenances its daemon is to
// know of, when they changed in a way it must learn (needsAPIRequestsWrite).
// A node with none, and none named before, gets no annotation. One that
// cannot be read is replaced, with a list: an empty one when there is
// nothing to name.
func (r *Reconciler) offerAPIRequests(ctx context.Context, node *corev1.Node, f *protocol.NodeState, items []v1alpha1.NodeMaintenance) error {
	if node == nil {
		return nil
	}
	have, known, err := protocol.ReadAPIRequests(node)
	want := apiRequestsFor(items, f)
	live := map[types.UID]bool{}
	for i := range items {
		if items[i].DeletionTimestamp == nil {
			live[items[i].UID] = true
		}
	}
	if !needsAPIRequestsWrite(have, known, err != nil, want, live) {
		return nil
	}
	offered := node.DeepCopy()
	protocol.OfferAPIRequests(want).Apply(offered)
	if err := r.Patch(ctx, offered, client.MergeFrom(node)); err != nil {
		return fmt.Errorf("name the requests of node %s for its daemon: %w", node.Name, err)
	}
	return nil
}
