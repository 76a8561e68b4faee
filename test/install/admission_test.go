package install

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/manifests"
)

const policyName = "kmaint-daemon-own-node"

// TestDaemonConfinedToItsNode installs kmaint's RBAC and admission policy
// for real and acts as the daemon of node A, with a token bound to a Pod on
// A as the kubelet would project it: it may change its daemon annotations
// on A and the status of A's NodeMaintenances, and nothing else.
func TestDaemonConfinedToItsNode(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	installIdentities(t)
	nodeA, nodeB := "confined-a", "confined-b"
	for _, name := range []string{nodeA, nodeB} {
		n := gen.Node(name)
		n.Annotations["example.com/owner"] = "ops"
		g.Expect(gen.CreateNode(ctx, bed.Client, n)).To(Succeed())
	}
	nmA, nmB := maintenance(t, "confined-nm-a", nodeA), maintenance(t, "confined-nm-b", nodeB)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "kmaint-daemon-confined-a"},
		Spec: corev1.PodSpec{
			ServiceAccountName: "kmaint-daemon",
			NodeName:           nodeA,
			Containers:         []corev1.Container{{Name: "daemon", Image: "kmaint"}},
		},
	}
	g.Expect(bed.Client.Create(ctx, pod)).To(Succeed())
	daemon := clientWithToken(t, podToken(t, pod))

	mergeNode := func(c client.Client, node, patch string) error {
		return c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch(types.MergePatchType, []byte(patch)))
	}
	ownAnnotations := `{"metadata":{"annotations":{"` + protocol.RebootRequested + `":"{}","` +
		protocol.CurrentConfig + `":"v2","` + protocol.State + `":"{\"phase\":\"idle\"}"}}}`

	// The binding takes a moment to be enforced: wait for the first refusal.
	g.Eventually(func() error { return mergeNode(daemon, nodeB, ownAnnotations) }).
		WithTimeout(30 * time.Second).Should(MatchError(ContainSubstring(policyName)))

	t.Run("allowed", func(t *testing.T) {
		// In order: set, set again unchanged, then clear one.
		for _, step := range []struct{ name, patch string }{
			{"own node's daemon annotations", ownAnnotations},
			{"own node, daemon annotations unchanged", `{"metadata":{"annotations":{"` + protocol.CurrentConfig + `":"v2"}}}`},
			{"own node's daemon annotation removed", `{"metadata":{"annotations":{"` + protocol.RebootRequested + `":null}}}`},
		} {
			if err := mergeNode(daemon, nodeA, step.patch); err != nil {
				t.Errorf("%s: %v", step.name, err)
			}
		}
		n := &corev1.Node{}
		if err := bed.Client.Get(ctx, client.ObjectKey{Name: nodeA}, n); err != nil {
			t.Fatal(err)
		}
		if _, ok := n.Annotations[protocol.RebootRequested]; ok || n.Annotations[protocol.CurrentConfig] != "v2" {
			t.Errorf("node %s annotations after the daemon's patches: %v", nodeA, n.Annotations)
		}
		status := client.RawPatch(types.MergePatchType, []byte(`{"status":{"journaledBootID":"boot-0"}}`))
		if err := daemon.Status().Patch(ctx, nmA.DeepCopy(), status); err != nil {
			t.Errorf("status of own node's NodeMaintenance: %v", err)
		}
		// The daemon reads the NodeMaintenances its Node names, one by
		// name (protocol.APIRequests).
		if err := daemon.Get(ctx, client.ObjectKeyFromObject(nmA), &v1alpha1.NodeMaintenance{}); err != nil {
			t.Errorf("get own node's NodeMaintenance: %v", err)
		}
	})

	t.Run("refused by the policy", func(t *testing.T) {
		const (
			annotations = "may change only the annotations"
			fields      = "may not change a Node's labels"
			ownNode     = "may only update its own Node"
			ownNM       = "may only update the status of NodeMaintenances for its node"
		)
		// The operator's annotations are refused by this policy and by
		// kmaint-operator-annotations; the API server names either.
		for name, key := range map[string]string{
			"operator's approval": protocol.RebootApproved, "operator's cordon marker": protocol.Cordoned,
			// Naming another node's request on its own node would have the
			// daemon read it, and ignore it; naming none would have it
			// cancel its node's requests. Only the operator names them.
			"operator's naming of requests": protocol.APIRequests,
		} {
			err := mergeNode(daemon, nodeA, `{"metadata":{"annotations":{"`+key+`":"[]"}}}`)
			if err == nil || !strings.Contains(err.Error(), annotations) && !strings.Contains(err.Error(), "kmaint: "+key+" on a Node") {
				t.Errorf("%s: want refused by %s or kmaint-operator-annotations, got %v", name, policyName, err)
			}
		}
		for name, tc := range map[string]struct{ node, patch, why string }{
			"other node's daemon annotations": {nodeB, ownAnnotations, ownNode},
			"another annotation":              {nodeA, `{"metadata":{"annotations":{"example.com/x":"y"}}}`, annotations},
			"another annotation removed":      {nodeA, `{"metadata":{"annotations":{"example.com/owner":null}}}`, annotations},
			"a label":                         {nodeA, `{"metadata":{"labels":{"example.com/x":"y"}}}`, fields},
			"a taint":                         {nodeA, `{"spec":{"taints":[{"key":"example.com/x","effect":"NoSchedule"}]}}`, fields},
			"unschedulable":                   {nodeA, `{"spec":{"unschedulable":true}}`, fields},
			"a finalizer":                     {nodeA, `{"metadata":{"finalizers":["example.com/x"]}}`, fields},
		} {
			expectRefusedByPolicy(t, name, mergeNode(daemon, tc.node, tc.patch), tc.why)
		}
		status := client.RawPatch(types.MergePatchType, []byte(`{"status":{"journaledBootID":"boot-0"}}`))
		expectRefusedByPolicy(t, "status of another node's NodeMaintenance", daemon.Status().Patch(ctx, nmB.DeepCopy(), status), ownNM)
	})

	t.Run("refused by RBAC", func(t *testing.T) {
		cs, err := kubernetes.NewForConfig(daemonConfig(podToken(t, pod)))
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		expectRefusedByRBAC(t, "list pods", err)
		err = cs.PolicyV1().Evictions("default").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "any"}})
		expectRefusedByRBAC(t, "create an eviction", err)
		_, err = cs.CoreV1().Secrets(namespace).Get(ctx, "kmaint-alert-webhook", metav1.GetOptions{})
		expectRefusedByRBAC(t, "get a secret", err)
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, gen.Node(nodeA), metav1.UpdateOptions{})
		expectRefusedByRBAC(t, "update a node's status", err)
		expectRefusedByRBAC(t, "delete a node", cs.CoreV1().Nodes().Delete(ctx, nodeB, metav1.DeleteOptions{}))
		expectRefusedByRBAC(t, "create a NodeMaintenance", daemon.Create(ctx, &v1alpha1.NodeMaintenance{
			ObjectMeta: metav1.ObjectMeta{Name: "by-the-daemon"},
			Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: nodeA, Reason: "test"},
		}))
		spec := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"reason":"changed"}}`))
		expectRefusedByRBAC(t, "change a NodeMaintenance's spec", daemon.Patch(ctx, nmA.DeepCopy(), spec))
		// A daemon needs no list or watch of NodeMaintenances, and a stolen
		// token does not show every node's requests.
		expectRefusedByRBAC(t, "list NodeMaintenances", daemon.List(ctx, &v1alpha1.NodeMaintenanceList{}))
		nms := cs.RESTClient().Get().AbsPath("/apis/kmaint.io/v1alpha1/nodemaintenances").Param("watch", "true").Do(ctx)
		expectRefusedByRBAC(t, "watch NodeMaintenances", nms.Error())
	})

	t.Run("token without a node", func(t *testing.T) {
		tr, err := kubernetes.NewForConfigOrDie(bed.Config).CoreV1().ServiceAccounts(namespace).CreateToken(ctx, "kmaint-daemon",
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		unbound := clientWithToken(t, tr.Status.Token)
		expectRefusedByPolicy(t, "own annotations with an unbound token", mergeNode(unbound, nodeA, ownAnnotations), "names no node")
	})
}

// installIdentities applies config/default's namespace, service accounts,
// RBAC and admission policy for real (not its workloads: no controller
// runs them here).
func installIdentities(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	for _, u := range manifests.Kustomize(t, "default") {
		switch u.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			if err := apply(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func maintenance(t testing.TB, name, node string) *v1alpha1.NodeMaintenance {
	t.Helper()
	nm := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: node, Reason: "install test"},
	}
	if err := bed.Client.Create(context.Background(), nm); err != nil {
		t.Fatal(err)
	}
	return nm
}

// podToken requests a token of the pod's service account bound to the pod,
// as the kubelet projects it: the API server adds the pod's node.
func podToken(t testing.TB, pod *corev1.Pod) string {
	t.Helper()
	tr, err := kubernetes.NewForConfigOrDie(bed.Config).CoreV1().ServiceAccounts(pod.Namespace).CreateToken(context.Background(),
		pod.Spec.ServiceAccountName, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To[int64](600),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

func daemonConfig(token string) *rest.Config {
	return &rest.Config{
		Host:            bed.Config.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: bed.Config.CAData},
		BearerToken:     token,
	}
}

func clientWithToken(t testing.TB, token string) client.Client {
	t.Helper()
	c, err := client.New(daemonConfig(token), client.Options{Scheme: bed.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// expectRefusedByPolicy checks that the daemon's policy refused the
// request with a message containing why; a CEL evaluation error, which
// failurePolicy Fail also turns into a refusal, does not count.
func expectRefusedByPolicy(t testing.TB, what string, err error, why string) {
	t.Helper()
	expectRefusedBy(t, policyName, what, err, why)
}

func expectRefusedByRBAC(t testing.TB, what string, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: allowed, want forbidden by RBAC", what)
	case !apierrors.IsForbidden(err) || strings.Contains(err.Error(), "ValidatingAdmissionPolicy"):
		t.Errorf("%s: refused, but not by RBAC: %v", what, err)
	}
}
