package protocol

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// APIRequests (operator): the node's NodeMaintenances that start in the API
// and that its daemon is to journal, or to keep while the node shows them
// raised, as a list of APIRequest, oldest first. It is how the daemon learns
// of them: a daemon that watched NodeMaintenances itself would cost the API
// server one delivery per node for every write of every NodeMaintenance in
// the cluster, since the API server indexes watches of a custom resource by
// no field, while a watch of one Node by name is indexed.
//
// The daemon reads each NodeMaintenance named here that it has not
// journaled, by name, and journals it as before. A request it journaled in
// this boot whose NodeMaintenance is no longer named was deleted: it is
// cancelled. A node with no such annotation, or one that cannot be read,
// tells the daemon nothing: it journals no request that starts in the API
// and cancels none, until the operator writes it. An empty list is written
// as [], not removed.
//
// The operator names a NodeMaintenance as soon as it sees it open (not
// Succeeded or Failed) and not being deleted, and keeps naming a Failed one
// while the node shows it raised. It drops one at once when it is deleted;
// one that only finished is dropped with the next write, which a finished
// request does not need.
const APIRequests = Prefix + "api-requests"

// APIRequest names one NodeMaintenance in APIRequests. The UID is the
// request's id; a NodeMaintenance of the same name with another UID is
// another request.
type APIRequest struct {
	Name string    `json:"name"`
	UID  types.UID `json:"uid"`
}

// ReadAPIRequests reads a node's APIRequests. known is false when the node
// has none, or when it cannot be read (err says why).
func ReadAPIRequests(node *corev1.Node) (reqs []APIRequest, known bool, err error) {
	ok, err := Decode(node, APIRequests, &reqs)
	if err != nil || !ok {
		return nil, false, err
	}
	for _, r := range reqs {
		if r.Name == "" || r.UID == "" {
			return nil, false, fmt.Errorf("annotation %s on node %s names a NodeMaintenance without a name or uid", APIRequests, node.Name)
		}
	}
	if reqs == nil {
		// A JSON null is no list.
		return nil, false, fmt.Errorf("annotation %s on node %s is null, not a list", APIRequests, node.Name)
	}
	return reqs, true, nil
}
