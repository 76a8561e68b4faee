package operator

import (
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/hooks"
)

// The operator's cache holds every Node and every open NodeMaintenance of
// the cluster (package history keeps the finished ones): at 5000 nodes,
// 5000 objects of 10-20 KB. The transforms below keep only what the
// operator reads, and share the strings that objects repeat. What others
// may write on a Node, up to 256 KiB of annotations, costs the cache a few
// KiB at most (protocol.Kept): 240 KiB on each of 2000 Nodes once held
// 470 MiB (BenchmarkPaddedNodes). Nothing they drop or cut is ever written
// back: the operator never writes a Node's status, its Node patches are
// computed against the cached copy (a merge patch names only what changed,
// so an annotation the cache dropped, or a value it cut, is left as it
// is), and it writes no finished NodeMaintenance but to delete it
// (retention, preconditioned on its UID and resourceVersion, which are
// kept).

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
// boot ID, of its conditions all but Ready and what node condition
// policies read (conditions), and of its annotations all but those it
// reads, bounded (protocol.Kept). Labels (pools and policies select nodes
// by them), spec and addresses (policies match nodes by address) stay.
func (s *slimmer) node(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	node.ManagedFields = nil
	node.Name = s.shared.str(node.Name)
	node.Labels = s.shared.mapOf(node.Labels, all, true)
	node.Annotations = protocol.Kept(node, s.shared.str)
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
	node.Status.Conditions = s.conditions(node.Status.Conditions)
	return node, nil
}

// maxOtherConditions bounds the conditions other than Ready a cached Node
// keeps: kubelet writes five, node-problem-detector a handful more, and
// whoever may write a Node's status could write thousands. A condition
// past the bound is not seen by node condition policies, which then ask
// for nothing (fail closed).
const maxOtherConditions = 32

// conditions returns a Node's conditions as the operator reads them, in a
// slice of their own: the one decoding made has room for twice as many,
// which kept was a third of a cached Node. Ready stays whole but for its
// message, which the gate and aftercare read. Of the others, node
// condition policies (package policy) read the type, the status and the
// lastTransitionTime; their reason, message and heartbeat are dropped,
// 112 bytes a condition remain. Dropping the heartbeat also lets a watch
// of Nodes tell a heartbeat, which changes nothing kept, from a change of
// status. Types, statuses and reasons repeat on every node and are shared;
// a message is not: a kubelet writes what it likes there, and a new one at
// every heartbeat would churn the table every node shares.
func (s *slimmer) conditions(conditions []corev1.NodeCondition) []corev1.NodeCondition {
	if len(conditions) == 0 {
		return nil
	}
	out := make([]corev1.NodeCondition, 0, min(len(conditions), maxOtherConditions+1))
	others, ready := 0, false
	for _, c := range conditions {
		c.Type = corev1.NodeConditionType(s.shared.str(string(c.Type)))
		c.Status = corev1.ConditionStatus(s.shared.str(string(c.Status)))
		if c.Type == corev1.NodeReady {
			// The first, as protocol.Ready reads it.
			if !ready {
				ready = true
				c.Reason = s.shared.str(c.Reason)
				out = append(out, c)
			}
			continue
		}
		if others == maxOtherConditions {
			continue
		}
		others++
		out = append(out, corev1.NodeCondition{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime})
	}
	return slices.Clip(out)
}

// job keeps of a hook's Job what the operator reads from its cache (the
// Job kind of package hooks and the gate's hookJobPool): its name, namespace,
// UID, resourceVersion, creation and deletion times, the labels and
// annotations under kmaint.io/ and app.kubernetes.io/managed-by (which
// name the hook, its token and its pool), and its status's conditions
// (whether it completed or failed, and why). Its spec, the pool's pod
// template with kmaint's environment, is most of a Job and is dropped:
// what reads it (whether a Job found under a hook's name is the one the
// gate would make) reads the Job from the API server. The cache holds the
// Jobs of the hooks namespace only, a day's worth (hooks.FinishedJobTTL).
func (s *slimmer) job(obj any) (any, error) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return obj, nil
	}
	return &batchv1.Job{
		TypeMeta: job.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: job.Name, Namespace: s.shared.str(job.Namespace), UID: job.UID, ResourceVersion: job.ResourceVersion,
			CreationTimestamp: job.CreationTimestamp, DeletionTimestamp: job.DeletionTimestamp,
			Labels:      s.shared.mapOf(job.Labels, kmaintJobKey, false),
			Annotations: s.shared.mapOf(job.Annotations, kmaintJobKey, false),
		},
		Status: batchv1.JobStatus{Conditions: slices.Clone(job.Status.Conditions)},
	}, nil
}

// kmaintJobKey says whether the operator reads a Job's label or
// annotation.
func kmaintJobKey(key string) bool {
	return strings.HasPrefix(key, protocol.Prefix) || key == hooks.ManagedByLabel
}

// maintenance shares the strings every NodeMaintenance repeats, and those
// one repeats within itself. The cache holds open records only, whole but
// for their managed fields: the controllers read and write them, and a
// shared string reads and writes as its own copy did (Go strings cannot
// change). Package history keeps the finished ones, in the form a Record
// takes. Every node of a pool rolled at once has an open record waiting:
// its boot id three times over (label, bootIDBefore, journaledBootID) and
// its message three (the status's, the Succeeded and the Waiting
// conditions'), each decoded into a string of its own, and conditions in a
// slice with room for twice as many (BenchmarkCachedOpenMaintenance).
func (s *slimmer) maintenance(obj any) (any, error) {
	nm, ok := obj.(*v1alpha1.NodeMaintenance)
	if !ok {
		return obj, nil
	}
	nm.ManagedFields = nil
	nm.APIVersion, nm.Kind = s.shared.str(nm.APIVersion), s.shared.str(nm.Kind)
	nm.Labels = s.shared.mapOf(nm.Labels, all, false)
	spec := &nm.Spec
	spec.NodeName, spec.Policy = s.shared.str(spec.NodeName), s.shared.str(spec.Policy)
	spec.Source, spec.Type = v1alpha1.Source(s.shared.str(string(spec.Source))), v1alpha1.MaintenanceType(s.shared.str(string(spec.Type)))
	st := &nm.Status
	st.Phase = v1alpha1.Phase(s.shared.str(string(st.Phase)))
	// Within the record: the first copy of each repeated string stands for
	// the others.
	same := func(s *string, as ...string) {
		for _, a := range as {
			if *s == a {
				*s = a
				return
			}
		}
	}
	boot := nm.Labels[v1alpha1.BootIDLabel]
	same(&st.BootIDBefore, boot)
	same(&st.JournaledBootID, boot, st.BootIDBefore)
	same(&st.RequestID, nm.Labels[v1alpha1.RequestIDLabel])
	if len(st.Conditions) > 0 {
		conditions := make([]metav1.Condition, len(st.Conditions))
		for i, c := range st.Conditions {
			c.Type, c.Reason = s.shared.str(c.Type), s.shared.str(c.Reason)
			c.Status = metav1.ConditionStatus(s.shared.str(string(c.Status)))
			same(&c.Message, st.Message)
			if i > 0 {
				same(&c.Message, conditions[i-1].Message)
			}
			conditions[i] = c
		}
		st.Conditions = conditions
	}
	return nm, nil
}
