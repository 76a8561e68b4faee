package operator

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/hooks"
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
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Message: "kubelet has sufficient memory available",
					Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: metav1.NewTime(time.Unix(200, 0)), LastTransitionTime: metav1.NewTime(time.Unix(100, 0))},
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
		len(got.Annotations) != 2 || len(got.Status.Conditions) != 2 || cap(got.Status.Conditions) != 2 {
		t.Errorf("kept what the operator never reads (the conditions in the decoded slice): %+v", got)
	}
	if got.Labels["pool"] != "a" || got.Annotations["kmaint.io/state"] != "{}" || got.Annotations[protocol.KarpenterDoNotDisrupt] != "true" ||
		!got.Spec.Unschedulable || len(got.Spec.Taints) != 1 || len(got.Status.Addresses) != 1 ||
		len(got.Status.Conditions) != 2 || !protocol.Ready(got) || got.Status.NodeInfo.BootID != "b1" {
		t.Errorf("dropped what the operator reads: %+v", got)
	}
	// Node condition policies read a condition's type, status and
	// transition; its heartbeat, reason and message are dropped.
	if want := (corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(time.Unix(100, 0))}); !reflect.DeepEqual(got.Status.Conditions[0], want) {
		t.Errorf("cached condition %+v, want %+v", got.Status.Conditions[0], want)
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

// Whoever may write a Node's status can give it any number of conditions;
// the cache keeps Ready and a bounded number of the others.
func TestSlimNodeBoundsItsConditions(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	for i := range 1000 {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeConditionType(fmt.Sprintf("Padding%d", i)), Status: corev1.ConditionTrue})
	}
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
		corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse})
	out, err := newSlimmer().node(n)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Node)
	if len(got.Status.Conditions) != maxOtherConditions+1 || cap(got.Status.Conditions) != len(got.Status.Conditions) {
		t.Errorf("kept %d conditions (room for %d), want %d", len(got.Status.Conditions), cap(got.Status.Conditions), maxOtherConditions+1)
	}
	if !protocol.Ready(got) {
		t.Error("the first Ready condition is not the one kept")
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

// Anyone who may patch Nodes may write 256 KiB of annotations on each,
// and the cache holds every Node: a cached Node's annotations take as
// much room whatever they pad it with (a key under kmaint.io/ that is not
// the protocol's, a huge opt-out, hundreds of acknowledgements, huge
// acknowledgements of the hooks the node waits for), and still mean what
// the Node's do: the opt-outs hold the node, quoted the same; the
// acknowledgements of the hooks its record names are kept, those that
// match their token still match, a huge one matches nothing and is still
// there for the end of the admission to remove.
func TestCachedNodeStaysFlatWhateverThePadding(t *testing.T) {
	const pad = 240 << 10
	at := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	token := protocol.HookToken("n", "p", "boot-1", at, protocol.BeforeReboot)
	record := protocol.HookRecord{Point: protocol.BeforeReboot, BootID: "boot-1", Token: token, Since: at,
		Hooks:   []protocol.HookProgress{{Name: "db-stepdown", Attempt: 1}, {Name: "storage", Attempt: 1}},
		Earlier: []protocol.HookStretch{{Point: protocol.BeforeDrain, BootID: "boot-1", Hooks: []string{"lb-drain"}}}}
	base := func() *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{
			protocol.State:                  protocol.Encode(protocol.DaemonState{Phase: protocol.DaemonIdle, BootID: "boot-1", Since: at}),
			protocol.Admitted:               protocol.Encode(protocol.Admission{BootID: "boot-1", Requests: []string{"r1"}, Time: at}),
			protocol.Hook:                   protocol.Encode(record),
			protocol.AckPrefix + "lb-drain": protocol.HookToken("n", "p", "boot-1", at, protocol.BeforeDrain),
			"node.alpha.kubernetes.io/ttl":  "0",
		}}}
	}
	size := func(n *corev1.Node) int {
		b := 0
		for k, v := range n.Annotations {
			b += len(k) + len(v)
		}
		return b
	}
	cache := func(n *corev1.Node) *corev1.Node {
		out, err := newSlimmer().node(n.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		return out.(*corev1.Node)
	}
	flat := size(cache(base()))
	// What a cut value may add: each opt-out and each acknowledgement the
	// record names, at most protocol.MaxForeignValue bytes.
	bound := flat + 5*(protocol.MaxForeignValue+len(protocol.AckPrefix)+len("db-stepdown"))
	paddings := map[string]func(n *corev1.Node, size int){
		"a key under kmaint.io/ that is not the protocol's": func(n *corev1.Node, size int) {
			n.Annotations["kmaint.io/pad"] = strings.Repeat("x", size)
		},
		"kmaint's do-not-disrupt": func(n *corev1.Node, size int) {
			n.Annotations[protocol.DoNotDisrupt] = strings.Repeat("é", size/2)
		},
		"Karpenter's do-not-disrupt": func(n *corev1.Node, size int) {
			n.Annotations[protocol.KarpenterDoNotDisrupt] = strings.Repeat("x", size)
		},
		"hundreds of acknowledgements of hooks the record does not name": func(n *corev1.Node, size int) {
			for i := range size / 1024 {
				n.Annotations[fmt.Sprintf("%shook-%04d", protocol.AckPrefix, i)] = strings.Repeat("x", 1000)
			}
		},
		"acknowledgements of the hooks the record names": func(n *corev1.Node, size int) {
			n.Annotations[protocol.AckPrefix+"db-stepdown"] = token + strings.Repeat("x", size/2)
			n.Annotations[protocol.AckPrefix+"storage"] = strings.Repeat("x", size/2)
		},
	}
	for name, padWith := range paddings {
		t.Run(name, func(t *testing.T) {
			small, big := base(), base()
			padWith(small, 1<<10)
			padWith(big, pad)
			cachedSmall, cachedBig := cache(small), cache(big)
			if size(cachedBig) != size(cachedSmall) || size(cachedBig) > bound {
				t.Errorf("a cached Node padded with %d KiB holds %d bytes of annotations, with 1 KiB %d, unpadded %d",
					pad>>10, size(cachedBig), size(cachedSmall), flat)
			}
			for k, v := range cachedBig.Annotations {
				if whole := big.Annotations[k]; len(whole) > len(v) && unsafe.StringData(whole) == unsafe.StringData(v) {
					t.Errorf("the cut %s keeps its whole value in memory", k)
				}
			}
			meansTheSame(t, big, cachedBig, token)
		})
	}
}

// meansTheSame checks that the operator makes of the cached Node what it
// makes of the Node.
func meansTheSame(t *testing.T, node, cached *corev1.Node, token string) {
	t.Helper()
	optOut := func(n *corev1.Node) string {
		if o := protocol.NodeOptOut(n); o != nil {
			return o.Message
		}
		return ""
	}
	if optOut(cached) != optOut(node) {
		t.Errorf("the cached Node's opt-out reads %q; the Node's %q", optOut(cached), optOut(node))
	}
	for _, hook := range []string{"db-stepdown", "storage", "lb-drain"} {
		key := protocol.AckPrefix + hook
		if _, ok := node.Annotations[key]; !ok {
			continue
		}
		if _, ok := cached.Annotations[key]; !ok {
			t.Errorf("the cache dropped %s, which the node's record names", key)
		}
		if protocol.Acknowledged(cached, hook, token) != protocol.Acknowledged(node, hook, token) {
			t.Errorf("%s opens its hook in the cache %t, on the Node %t", key,
				protocol.Acknowledged(cached, hook, token), protocol.Acknowledged(node, hook, token))
		}
	}
	for k := range cached.Annotations {
		if strings.HasPrefix(k, protocol.Prefix) && !slices.Contains(protocol.NodeAnnotations(), k) {
			t.Errorf("the cache kept %s, which is not the protocol's", k)
		}
	}
	// The end of the admission, computed against the cached copy as the
	// gate computes it, removes the acknowledgements it kept and leaves
	// the rest as it is.
	ended := cached.DeepCopy()
	protocol.Release().Apply(ended)
	raw, err := client.MergeFrom(cached).Data(ended)
	if err != nil {
		t.Fatal(err)
	}
	var patch struct {
		Metadata struct {
			Annotations map[string]*string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &patch); err != nil {
		t.Fatal(err)
	}
	for k := range cached.Annotations {
		if v, ok := patch.Metadata.Annotations[k]; strings.HasPrefix(k, protocol.AckPrefix) && (!ok || v != nil) {
			t.Errorf("the end of the admission does not remove %s: %s", k, raw)
		}
	}
	for k := range patch.Metadata.Annotations {
		if _, ok := cached.Annotations[k]; !ok {
			t.Errorf("the end of the admission writes %s, which the cache dropped: %s", k, raw)
		}
	}
}

// A cached hook Job keeps what the gate reads of it (its name, UID and
// kmaint's labels and annotations, whether it finished and why) and none
// of its spec, the pool's pod template with kmaint's environment: most of
// a Job, and a template's size is the pool author's.
func TestSlimJobKeepsWhatTheGateReads(t *testing.T) {
	now := metav1.Now()
	h := &v1alpha1.Hook{Name: "upgrade", Job: &v1alpha1.HookJob{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "img", Command: []string{"sh", "-c", strings.Repeat("x", 64<<10)}}}}}}}
	job := hooks.NewJob(h, hooks.JobContext{Namespace: "kmaint-hooks", Pool: "p", Node: "n", Point: protocol.BeforeReboot,
		BootID: "boot-1", Token: "0123456789abcdef01234567", Attempt: 1, Deadline: now.Add(time.Minute), Now: now.Time})
	job.UID, job.ResourceVersion, job.CreationTimestamp = "uid-1", "7", now
	job.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kmaint-operator"}}
	job.Labels["example.com/team"] = "db"
	job.Annotations["example.com/note"] = strings.Repeat("n", 4<<10)
	job.OwnerReferences = []metav1.OwnerReference{{Name: "x"}}
	for name, status := range map[string]batchv1.JobStatus{
		"running": {Active: 1, StartTime: &now},
		"complete": {Succeeded: 1, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}},
		"failed": {Failed: 1, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline"}}},
	} {
		t.Run(name, func(t *testing.T) {
			served := job.DeepCopy()
			served.Status = status
			out, err := newSlimmer().job(served.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*batchv1.Job)
			want := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: job.Namespace, UID: "uid-1", ResourceVersion: "7",
				CreationTimestamp: now, Labels: map[string]string{hooks.TokenLabel: "0123456789abcdef01234567", hooks.HookLabel: "upgrade", hooks.ManagedByLabel: "kmaint"},
				Annotations: map[string]string{hooks.PoolAnnotation: "p", hooks.NodeAnnotation: "n"}},
				Status: batchv1.JobStatus{Conditions: status.Conditions}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the cached Job is\n %+v\nwant\n %+v", got, want)
			}
			if hooks.PhaseOf(got) != hooks.PhaseOf(served) {
				t.Errorf("the cached Job reads %+v, the Job %+v", hooks.PhaseOf(got), hooks.PhaseOf(served))
			}
		})
	}
}
