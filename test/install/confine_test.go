package install

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

// daemonOf creates a Pod of kmaint-daemon on the node and returns a token
// bound to it, as the kubelet projects it: what a stolen daemon token is.
func daemonOf(t *testing.T, node string) string {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "kmaint-daemon-" + node},
		Spec: corev1.PodSpec{
			ServiceAccountName: "kmaint-daemon",
			NodeName:           node,
			Containers:         []corev1.Container{{Name: "daemon", Image: "kmaint"}},
		},
	}
	if err := bed.Client.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return podToken(t, pod)
}

// operatorToken returns a token of kmaint-operator's service account.
func operatorToken(t *testing.T) string {
	t.Helper()
	return serviceAccountToken(t, namespace, "kmaint-operator")
}

// waitForPolicy waits until the binding of the named policy is enforced:
// the probe is refused by it.
func waitForPolicy(t *testing.T, name string, probe func() error) {
	t.Helper()
	NewWithT(t).Eventually(probe).WithTimeout(30*time.Second).Should(MatchError(ContainSubstring("ValidatingAdmissionPolicy '"+name+"'")),
		"policy %s is enforced", name)
}

// expectRefusedBy checks that the named policy refused the request with a
// message containing why.
func expectRefusedBy(t testing.TB, policy, what string, err error, why string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: allowed, want refused by %s", what, policy)
	case !strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+policy+"'"):
		t.Errorf("%s: refused, but not by %s: %v", what, policy, err)
	case !strings.Contains(err.Error(), why):
		t.Errorf("%s: refused by %s, but not because %s: %v", what, policy, why, err)
	}
}

// TestDaemonWritesOnlyItsStatusFields: of its own node's NodeMaintenances'
// status, the daemon may write status.journaledBootID and
// status.journaledTime, once; every other status field is the operator's.
// A stolen token once wrote a 1 MiB status.message, and Succeeded with a
// completion in 2099.
func TestDaemonWritesOnlyItsStatusFields(t *testing.T) {
	ctx := context.Background()
	installIdentities(t)
	node := "status-a"
	if err := gen.CreateNode(ctx, bed.Client, gen.Node(node)); err != nil {
		t.Fatal(err)
	}
	daemon := clientWithToken(t, daemonOf(t, node))
	nm := maintenance(t, "status-nm-a", node)
	patch := func(status string) error {
		return daemon.Status().Patch(ctx, nm.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"status":`+status+`}`)))
	}
	const policy, notOwned = "kmaint-daemon-own-node", "may write only status.journaledBootID and status.journaledTime"
	waitForPolicy(t, policy, func() error { return patch(`{"phase":"Requested"}`) })

	journaled := `{"journaledBootID":"boot-0","journaledTime":"2025-03-01T02:00:00Z"}`
	if err := patch(journaled); err != nil {
		t.Fatalf("the daemon's own fields: %v", err)
	}
	if err := patch(journaled); err != nil {
		t.Errorf("the daemon's own fields written again, unchanged: %v", err)
	}
	expectRefusedBy(t, policy, "journaledBootID rewritten", patch(`{"journaledBootID":"boot-7"}`), "once; they cannot be changed")
	expectRefusedBy(t, policy, "journaledTime rewritten", patch(`{"journaledTime":"2099-01-01T00:00:00Z"}`), "once; they cannot be changed")

	// One value per field of the status that is not the daemon's: a field
	// added to the API later fails here until the policy names it.
	in2099 := metav1.NewTime(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))
	values := map[string]any{
		"phase":        v1alpha1.PhaseSucceeded,
		"requestID":    "forged",
		"bootIDBefore": "boot-0",
		"bootIDAfter":  "boot-1",
		"phaseTimes":   v1alpha1.PhaseTimes{Succeeded: &in2099},
		"hookTimes":    []v1alpha1.HookTime{{Point: "afterReboot", Hooks: []string{"check"}, Started: in2099, Passed: &in2099}},
		"message":      "rebooted, trust me",
		"conditions": []metav1.Condition{{Type: v1alpha1.SucceededCondition, Status: metav1.ConditionTrue,
			Reason: v1alpha1.RebootedReason, LastTransitionTime: in2099}},
	}
	st := reflect.TypeFor[v1alpha1.NodeMaintenanceStatus]()
	for i := range st.NumField() {
		field, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		if field == "journaledBootID" || field == "journaledTime" {
			continue
		}
		v, ok := values[field]
		if !ok {
			t.Errorf("status.%s: no value to try; add one, and the field to %s", field, policy)
			continue
		}
		raw, err := json.Marshal(map[string]any{field: v})
		if err != nil {
			t.Fatal(err)
		}
		expectRefusedBy(t, policy, "status."+field, patch(string(raw)), notOwned)
	}
	expectRefusedBy(t, policy, "Succeeded with a completion in 2099",
		patch(`{"phase":"Succeeded","phaseTimes":{"succeeded":"2099-01-01T00:00:00Z"}}`), notOwned)

	// Past the CRD's bound the API server refuses before any policy runs.
	err := patch(fmt.Sprintf(`{"message":%q}`, strings.Repeat("m", 1<<20)))
	if err == nil || !strings.Contains(err.Error(), "status.message: Too long: may not be more than 32768 bytes") {
		t.Errorf("a 1 MiB status.message: want refused as too long, got %v", err)
	}

	got := &v1alpha1.NodeMaintenance{}
	if err := bed.Client.Get(ctx, client.ObjectKeyFromObject(nm), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != "" || got.Status.Message != "" || got.Status.JournaledBootID != "boot-0" {
		t.Errorf("status after the daemon's writes: %+v", got.Status)
	}
}

// TestDaemonEventsConfined: the daemon's events go to namespace default,
// regard its own Node, and carry its own reasons as kmaint-daemon. A stolen
// token once wrote a RebootApproved event about another node in
// kube-system.
func TestDaemonEventsConfined(t *testing.T) {
	ctx := context.Background()
	installIdentities(t)
	nodeA, nodeB := "events-a", "events-b"
	for _, name := range []string{nodeA, nodeB} {
		if err := gen.CreateNode(ctx, bed.Client, gen.Node(name)); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := kubernetes.NewForConfig(daemonConfig(daemonOf(t, nodeA)))
	if err != nil {
		t.Fatal(err)
	}
	const policy = "kmaint-daemon-events"
	event := func(name, ns, reason, controller string, regarding corev1.ObjectReference) *eventsv1.Event {
		return &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			EventTime:  metav1.NewMicroTime(time.Now()), Type: corev1.EventTypeNormal,
			Reason: reason, Action: "Reboot", Note: "test", Regarding: regarding,
			ReportingController: controller, ReportingInstance: controller + "-" + nodeA,
		}
	}
	own := corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: nodeA}
	create := func(e *eventsv1.Event) error {
		_, err := cs.EventsV1().Events(e.Namespace).Create(ctx, e, metav1.CreateOptions{})
		return err
	}
	waitForPolicy(t, policy, func() error {
		return create(event(fmt.Sprintf("probe-%d", time.Now().UnixNano()), "default", "RebootApproved", "kmaint-daemon", own))
	})

	// What the daemon writes: through client-go's event recorder, as the
	// daemon does, and a patch of it (an event series).
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	stop := make(chan struct{})
	defer close(stop)
	broadcaster.StartRecordingToSink(stop)
	node := &corev1.Node{}
	if err := bed.Client.Get(ctx, client.ObjectKey{Name: nodeA}, node); err != nil {
		t.Fatal(err)
	}
	broadcaster.NewRecorder(bed.Scheme, "kmaint-daemon").Eventf(node, nil, corev1.EventTypeWarning, "RebootFailed", "Reboot", "The reboot could not be started: %s", "test")
	NewWithT(t).Eventually(func(g Gomega) []string {
		var evs eventsv1.EventList
		g.Expect(bed.Client.List(ctx, &evs, client.InNamespace("default"))).To(Succeed())
		var reasons []string
		for _, e := range evs.Items {
			if e.Regarding.Name == nodeA && e.ReportingController == "kmaint-daemon" {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}).WithTimeout(30 * time.Second).Should(ContainElement("RebootFailed"))
	written := event("daemon-rebooting", "default", "Rebooting", "kmaint-daemon", own)
	if err := create(written); err != nil {
		t.Fatalf("an event about its own Node: %v", err)
	}
	series := []byte(`{"series":{"count":2,"lastObservedTime":"` + time.Now().UTC().Format("2006-01-02T15:04:05.000000Z") + `"}}`)
	if _, err := cs.EventsV1().Events("default").Patch(ctx, written.Name, types.MergePatchType, series, metav1.PatchOptions{}); err != nil {
		t.Errorf("a series update of its own event: %v", err)
	}

	for name, tc := range map[string]struct {
		e   *eventsv1.Event
		why string
	}{
		"RebootApproved about its own node": {event("forged-reason", "default", "RebootApproved", "kmaint-daemon", own), "may only report the reasons Rebooting, RebootFailed, RebootNotObserved"},
		"about another node":                {event("forged-node", "default", "Rebooting", "kmaint-daemon", corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: nodeB}), "may only write events about its own Node, not about Node " + nodeB},
		"about a Pod":                       {event("forged-pod", "default", "Rebooting", "kmaint-daemon", corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "default", Name: nodeA}), "not about Pod " + nodeA},
	} {
		expectRefusedBy(t, policy, name, create(tc.e), tc.why)
	}
	// As the operator's gate: this policy and kmaint-events both refuse it;
	// the API server names either.
	if err := create(event("forged-controller", "default", "Rebooting", "kmaint-gate", own)); err == nil ||
		!strings.Contains(err.Error(), "as kmaint-daemon, not Rebooting as kmaint-gate") && !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'kmaint-events'") {
		t.Errorf("as the operator's gate: want refused by %s or kmaint-events, got %v", policy, err)
	}
	related := event("forged-related", "default", "Rebooting", "kmaint-daemon", own)
	related.Related = &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: nodeB}
	expectRefusedBy(t, policy, "related to another node", create(related), "(related to Node "+nodeB+")")

	// Outside namespace default RBAC refuses first, as it does the core API.
	expectRefusedByRBAC(t, "RebootApproved about another node in kube-system",
		create(event("forged", "kube-system", "RebootApproved", "kmaint-gate", corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: nodeB})))
	expectRefusedByRBAC(t, "an event in the daemon's own namespace", create(event("forged", namespace, "Rebooting", "kmaint-daemon", own)))
	_, err = cs.CoreV1().Events("default").Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "forged-core", Namespace: "default"},
		InvolvedObject: own, Reason: "Rebooting", Message: "test", Type: corev1.EventTypeNormal,
	}, metav1.CreateOptions{})
	expectRefusedByRBAC(t, "a core/v1 event", err)
}
