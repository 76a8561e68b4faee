package operator

import (
	"reflect"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// The cached Node keeps what the gate and the policies read: labels,
// kmaint's annotations and the node's opt-out, spec, addresses, the Ready
// condition and the boot ID.
func TestSlimNodeKeepsWhatTheOperatorReads(t *testing.T) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"pool": "a"},
			Annotations: map[string]string{"kmaint.io/state": "{}", protocol.KarpenterDoNotDisrupt: "true",
				"node.alpha.kubernetes.io/ttl": "0", "csi.volume.kubernetes.io/nodeid": `{"ebs.csi.aws.com":"i-1"}`},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Message: "kubelet has sufficient memory available"},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
			},
			NodeInfo: corev1.NodeSystemInfo{BootID: "b1", KernelVersion: "6.1", MachineID: "m"},
			Images:   []corev1.ContainerImage{{Names: []string{"img"}, SizeBytes: 1}},
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
		},
	}
	out, err := newSlimmer().node(n)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Node)
	if got.ManagedFields != nil || got.Status.Images != nil || got.Status.Capacity != nil || got.Status.NodeInfo.KernelVersion != "" ||
		len(got.Annotations) != 2 || len(got.Status.Conditions) != 1 || cap(got.Status.Conditions) != 1 {
		t.Errorf("kept what the operator never reads (the Ready condition in the decoded slice of all): %+v", got)
	}
	if got.Labels["pool"] != "a" || got.Annotations["kmaint.io/state"] != "{}" || got.Annotations[protocol.KarpenterDoNotDisrupt] != "true" ||
		!got.Spec.Unschedulable || len(got.Spec.Taints) != 1 || len(got.Status.Addresses) != 1 ||
		len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != corev1.NodeReady || got.Status.NodeInfo.BootID != "b1" {
		t.Errorf("dropped what the operator reads: %+v", got)
	}
	if opt := protocol.NodeOptOut(got); opt == nil {
		t.Error("the cached node lost its do-not-disrupt opt-out")
	}
	notReady := n.DeepCopy()
	notReady.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue}}
	if out, _ := newSlimmer().node(notReady); protocol.Ready(out.(*corev1.Node)) {
		t.Error("a node without a Ready condition reads Ready once cached")
	}
}

// Two Nodes decoded apart share their label keys and values, and a record
// its node's name, once cached.
func TestSlimmerSharesRepeatedStrings(t *testing.T) {
	s := newSlimmer()
	node := func() *corev1.Node {
		// Built from bytes, as a decoder gives each object its own copy.
		name := string([]byte("ip-10-0-0-1.ec2.internal"))
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{string([]byte("topology.kubernetes.io/zone")): string([]byte("us-east-1a"))}}}
	}
	a, _ := s.node(node())
	b, _ := s.node(node())
	nm, _ := s.maintenance(&v1alpha1.NodeMaintenance{Spec: v1alpha1.NodeMaintenanceSpec{NodeName: string([]byte("ip-10-0-0-1.ec2.internal"))}})
	na, nb := a.(*corev1.Node), b.(*corev1.Node)
	if unsafe.StringData(na.Name) != unsafe.StringData(nb.Name) || unsafe.StringData(na.Name) != unsafe.StringData(nm.(*v1alpha1.NodeMaintenance).Spec.NodeName) {
		t.Error("the node's name is not shared")
	}
	for k, v := range na.Labels {
		for k2, v2 := range nb.Labels {
			if unsafe.StringData(k) != unsafe.StringData(k2) || unsafe.StringData(v) != unsafe.StringData(v2) {
				t.Errorf("label %s=%s is not shared", k, v)
			}
		}
	}
}

// A cached open NodeMaintenance reads as it was served, with the strings it
// repeats (its boot id, its message) stored once, and its conditions in a
// slice of their own length.
func TestSlimMaintenanceKeepsEveryFieldAndSharesWhatItRepeats(t *testing.T) {
	own := func(s string) string { return string([]byte(s)) } // as a decoder gives each field its own copy
	boot, message := "5d5c3f8e-0c1e-4e53-9d0b-8a6f7c2b1a90", "waiting: pool a has 1 of 1 nodes unavailable"
	at := metav1.NewTime(metav1.Now().Rfc3339Copy().Time)
	conditions := make([]metav1.Condition, 2, 4)
	conditions[0] = metav1.Condition{Type: own(v1alpha1.SucceededCondition), Status: metav1.ConditionUnknown, Reason: own("Requested"), Message: own(message), LastTransitionTime: at}
	conditions[1] = metav1.Condition{Type: own(v1alpha1.WaitingCondition), Status: metav1.ConditionTrue, Reason: own("Budget"), Message: own(message), LastTransitionTime: at}
	nm := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: "n-host-1", ResourceVersion: "7",
			Labels:        map[string]string{v1alpha1.BootIDLabel: own(boot), v1alpha1.RequestIDLabel: own("req-1")},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kmaint-operator"}}},
		Spec: v1alpha1.NodeMaintenanceSpec{NodeName: own("n"), Type: v1alpha1.RebootMaintenance, Source: v1alpha1.SourceHost, Reason: "kernel"},
		Status: v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseRequested, RequestID: own("req-1"), BootIDBefore: own(boot), JournaledBootID: own(boot),
			JournaledTime: &at, Message: own(message), Conditions: conditions},
	}
	want := nm.DeepCopy()
	want.ManagedFields = nil
	out, _ := newSlimmer().maintenance(nm)
	got := out.(*v1alpha1.NodeMaintenance)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the cached record reads otherwise than it was served:\n got %+v\nwant %+v", got, want)
	}
	same := func(what, a, b string) {
		if unsafe.StringData(a) != unsafe.StringData(b) {
			t.Errorf("%s is stored twice", what)
		}
	}
	same("the boot id (label, before)", got.Labels[v1alpha1.BootIDLabel], got.Status.BootIDBefore)
	same("the boot id (label, journaled)", got.Labels[v1alpha1.BootIDLabel], got.Status.JournaledBootID)
	same("the request id", got.Labels[v1alpha1.RequestIDLabel], got.Status.RequestID)
	same("the message (Succeeded)", got.Status.Message, got.Status.Conditions[0].Message)
	same("the message (Waiting)", got.Status.Message, got.Status.Conditions[1].Message)
	if cap(got.Status.Conditions) != len(got.Status.Conditions) {
		t.Errorf("conditions kept in a slice of %d for %d", cap(got.Status.Conditions), len(got.Status.Conditions))
	}
}
