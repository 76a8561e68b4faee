package operator

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/operator/api/protocol"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
)

// The operator's cache holds every Node and every NodeMaintenance of the
// cluster: at 5000 nodes and a year of monthly reboots, 5000 objects of
// 10-20 KB and 60,000 records. The transforms below keep only what the
// operator reads, and share the strings that objects repeat. Nothing they
// drop is ever written back: the operator never writes a Node's status, its
// Node patches are computed against the cached copy (a merge patch names
// only what changed, so an annotation the cache dropped is left as it is),
// and it writes no finished NodeMaintenance but to delete it (retention,
// preconditioned on its UID and resourceVersion, which are kept).

// slimmer holds the cache's transforms and the strings they share between
// the objects of both kinds: a record's node name is its Node's.
type slimmer struct {
	shared *interner
}

func newSlimmer() *slimmer {
	return &slimmer{shared: newInterner()}
}

// node drops what the operator never reads from a cached Node: managed
// fields, the image and volume lists (most of a real node's size), its
// capacity, daemon endpoints and config, of its system info all but the
// boot ID, of its conditions all but Ready, and of its annotations all but
// kmaint's own and Karpenter's do-not-disrupt (the node's opt-out). Labels
// (pools and policies select nodes by them), spec and addresses (policies
// match nodes by address) stay.
func (s *slimmer) node(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	node.ManagedFields = nil
	node.Name = s.shared.str(node.Name)
	node.Labels = s.shared.mapOf(node.Labels, all, true)
	node.Annotations = s.shared.mapOf(node.Annotations, readNodeAnnotation, false)
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
	node.Status.Conditions = slices.DeleteFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type != corev1.NodeReady
	})
	return node, nil
}

// readNodeAnnotation says whether the operator reads a Node's annotation.
func readNodeAnnotation(key string) bool {
	return strings.HasPrefix(key, protocol.Prefix) || key == protocol.KarpenterDoNotDisrupt
}

// maintenance shares the strings every NodeMaintenance repeats, and keeps,
// of a finished one, only what the operator reads of it; the rest says how
// it went to a person, who reads it from the API server (kubectl and the
// plugin do). A year of monthly reboots is twelve finished records per node,
// and they are most of the cache: this takes what one holds from about
// 1.9 KB to under 1 KB (BenchmarkCachedFinishedMaintenance).
//
// What stays of a finished record: the name, UID, resourceVersion and
// creation time (retention deletes on them and orders by age), the node,
// source and policy, the phase and the time it was reached (retention, the
// policies' cooldowns and outcomes), the request id and the boot label (a
// request the node raised is recorded once), the value a Prometheus policy
// saw (its outcomes), and the condition that says the record cannot be read.
// A record that cannot be read, or that is not finished, is kept whole but
// for its managed fields.
func (s *slimmer) maintenance(obj any) (any, error) {
	nm, ok := obj.(*v1alpha1.NodeMaintenance)
	if !ok {
		return obj, nil
	}
	nm.ManagedFields = nil
	nm.APIVersion, nm.Kind = s.shared.str(nm.APIVersion), s.shared.str(nm.Kind)
	spec := &nm.Spec
	spec.NodeName, spec.Policy = s.shared.str(spec.NodeName), s.shared.str(spec.Policy)
	spec.Source, spec.Type = v1alpha1.Source(s.shared.str(string(spec.Source))), v1alpha1.MaintenanceType(s.shared.str(string(spec.Type)))
	nm.Status.Phase = v1alpha1.Phase(s.shared.str(string(nm.Status.Phase)))
	if nm.Unreadable() != nil || !nm.Status.Phase.Done() {
		return nm, nil
	}
	nm.Labels = s.shared.mapOf(nm.Labels, only(v1alpha1.RequestIDLabel, v1alpha1.BootIDLabel), false)
	nm.Annotations = s.shared.mapOf(nm.Annotations, only(v1alpha1.ValueAnnotation), false)
	spec.Reason = ""
	st := &nm.Status
	st.Message = ""
	st.Conditions = slices.DeleteFunc(st.Conditions, func(c metav1.Condition) bool {
		return c.Type != v1alpha1.UnreadableCondition
	})
	if len(st.Conditions) == 0 {
		st.Conditions = nil
	}
	st.BootIDBefore, st.JournaledBootID, st.BootIDAfter, st.JournaledTime = "", "", "", nil
	st.PhaseTimes = v1alpha1.PhaseTimes{Succeeded: st.PhaseTimes.Succeeded, Failed: st.PhaseTimes.Failed}
	return nm, nil
}

// only keeps the keys named, for interner.mapOf.
func only(keys ...string) func(string) bool {
	return func(k string) bool { return slices.Contains(keys, k) }
}
