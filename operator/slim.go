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

// slimFinishedMaintenance keeps, of a finished NodeMaintenance, only what
// the operator reads of one; the rest says how it went to a person, who
// reads it from the API server (kubectl and the plugin do). A year of
// monthly reboots is twelve finished records per node, and they are most
// of the cache: this takes what one holds from about 1.9 KB to 1.1 KB
// (BenchmarkCachedFinishedMaintenance).
//
// What stays: the name, UID, resourceVersion and creation time (retention
// deletes on them and orders by age), the node, source and policy, the
// phase and the time it was reached (retention, the policies' cooldowns
// and outcomes), the request id and the boot label (a request the node
// raised is recorded once), the value a Prometheus policy saw (its
// outcomes), and the condition that says the record cannot be read. A
// record that cannot be read, or that is not finished, is kept whole but
// for its managed fields.
func slimFinishedMaintenance(obj any) (any, error) {
	nm, ok := obj.(*v1alpha1.NodeMaintenance)
	if !ok {
		return obj, nil
	}
	nm.ManagedFields = nil
	if nm.Unreadable() != nil || !nm.Status.Phase.Done() {
		return nm, nil
	}
	nm.Labels = only(nm.Labels, v1alpha1.RequestIDLabel, v1alpha1.BootIDLabel)
	nm.Annotations = only(nm.Annotations, v1alpha1.ValueAnnotation)
	nm.Spec.Reason = ""
	s := &nm.Status
	s.Message = ""
	s.Conditions = slices.DeleteFunc(s.Conditions, func(c metav1.Condition) bool {
		return c.Type != v1alpha1.UnreadableCondition
	})
	if len(s.Conditions) == 0 {
		s.Conditions = nil
	}
	s.BootIDBefore, s.JournaledBootID, s.BootIDAfter, s.JournaledTime = "", "", "", nil
	s.PhaseTimes = v1alpha1.PhaseTimes{Succeeded: s.PhaseTimes.Succeeded, Failed: s.PhaseTimes.Failed}
	return nm, nil
}

// only returns m with no keys but keys, nil when none of them is in it.
// m itself is returned when it holds nothing else.
func only(m map[string]string, keys ...string) map[string]string {
	kept := 0
	for _, k := range keys {
		if _, ok := m[k]; ok {
			kept++
		}
	}
	switch kept {
	case 0:
		return nil
	case len(m):
		return m
	}
	out := make(map[string]string, kept)
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}
