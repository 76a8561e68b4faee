package operator

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/operator/api/v1alpha1"
)

// The operator's cache holds every Node and every NodeMaintenance of the
// cluster: at 5000 nodes and a year of monthly reboots, 5000 objects of
// 10-20 KB and 60,000 records. The transforms below keep only what the
// operator reads. Nothing they drop is ever written back: the operator
// never writes a Node's status, its Node patches are computed against the
// cached copy (a merge patch names only what changed), and it writes no
// finished NodeMaintenance but to delete it (retention, preconditioned on
// its UID and resourceVersion, which are kept).

// slimNode drops what the operator never reads from a cached Node: managed
// fields, the image and volume lists (most of a real node's size), its
// capacity, daemon endpoints and config, and of its system info all but
// the boot ID. Labels, annotations, spec, addresses (policies match nodes
// by address) and conditions stay.
func slimNode(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	node.ManagedFields = nil
	node.Status.Images = nil
	node.Status.VolumesInUse = nil
	node.Status.VolumesAttached = nil
	node.Status.Capacity = nil
	node.Status.Allocatable = nil
	node.Status.DaemonEndpoints = corev1.NodeDaemonEndpoints{}
	node.Status.Config = nil
	node.Status.RuntimeHandlers = nil
	node.Status.Features = nil
	node.Status.NodeInfo = corev1.NodeSystemInfo{BootID: node.Status.NodeInfo.BootID}
	return node, nil
}

// slimFinishedMaintenance drops, from a finished NodeMaintenance, its
// message and conditions (and from every one its managed fields), which say how it went for a person reading it
// (kubectl and the plugin read it from the API server). What the operator
// reads of finished records stays: the node, source and policy, the phase,
// the request id, the boot IDs and the phase times (retention, the
// policies' last requests, the requests a node already recorded), and the
// condition that says it cannot be read. A record that cannot be read, or
// that is not finished, is kept whole.
func slimFinishedMaintenance(obj any) (any, error) {
	nm, ok := obj.(*v1alpha1.NodeMaintenance)
	if !ok {
		return obj, nil
	}
	nm.ManagedFields = nil
	if nm.Unreadable() != nil || !nm.Status.Phase.Done() {
		return nm, nil
	}
	nm.Status.Message = ""
	nm.Status.Conditions = slices.DeleteFunc(nm.Status.Conditions, func(c metav1.Condition) bool {
		return c.Type != v1alpha1.UnreadableCondition
	})
	if len(nm.Status.Conditions) == 0 {
		nm.Status.Conditions = nil
	}
	return nm, nil
}
