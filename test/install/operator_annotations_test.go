package install

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/manifests"
)

// userWith returns a client for a user whom a ClusterRole of its own
// grants rule, impersonated with groups besides system:authenticated.
func userWith(t *testing.T, name string, rule rbacv1.PolicyRule, groups ...string) client.Client {
	t.Helper()
	grant(t, "test-user-"+name, name, rule)
	return impersonating(t, name, groups...)
}

// grant gives user rules, through a ClusterRole and a ClusterRoleBinding
// of the name.
func grant(t *testing.T, name, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := bed.Client.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}

func impersonating(t *testing.T, name string, groups ...string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(bed.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: name, Groups: append([]string{"system:authenticated"}, groups...)}
	c, err := client.New(cfg, client.Options{Scheme: bed.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOnlyTheOperatorWritesItsAnnotations installs kmaint's admission
// policies for real: a user who may patch Nodes cannot approve a reboot,
// admit a node, or take either away; nor cordon-mark, settle or rewrite any
// other annotation of the operator's. Their own annotations, and the
// node's opt-out, stay theirs. The operator's service account may write
// them, and so may the cluster's administrators (system:masters), the
// break-glass.
func TestOnlyTheOperatorWritesItsAnnotations(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	installIdentities(t)
	const policy = "kmaint-operator-annotations"
	node := "operator-annotations"
	g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(node, gen.Admitted("boot-0", time.Now(), "r1")))).To(Succeed())
	// A user who may get, patch and create Nodes, as many add-ons may.
	mallory := userWith(t, "mallory", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch", "create"}})
	patch := func(c client.Client, annotations map[string]any) error { return annotateNode(t, c, node, annotations) }
	refused := func(what string, err error, names string) {
		t.Helper()
		expectRefusedBy(t, policy, what, err, "kmaint: "+names+" on a Node")
	}

	// The binding takes a moment to be enforced: wait for the first
	// refusal, with a new value each time (a write let through before
	// would make the same one a no-op), then put the node back.
	waitForPolicy(t, policy, func() error {
		return patch(mallory, map[string]any{protocol.AdmissionHeld: time.Now().Format(time.RFC3339Nano)})
	})
	g.Expect(patch(bed.Client, map[string]any{protocol.AdmissionHeld: nil})).To(Succeed())

	refused("an approval", patch(mallory, map[string]any{protocol.RebootApproved: "boot-0"}), protocol.RebootApproved)
	refused("an approval with a new admission", patch(mallory, map[string]any{
		protocol.RebootApproved: "boot-0", protocol.Admitted: protocol.Encode(protocol.Admission{BootID: "boot-0"})}),
		protocol.Admitted+", "+protocol.RebootApproved)
	refused("the admission removed", patch(mallory, map[string]any{protocol.Admitted: nil}), protocol.Admitted)
	for _, key := range protocol.OperatorAnnotations() {
		refused("writing "+key, patch(mallory, map[string]any{key: "x"}), key)
	}
	refused("a node created with an approval", mallory.Create(ctx, gen.Node("operator-annotations-new", gen.Approved("boot-0"))),
		protocol.Admitted+", "+protocol.RebootApproved)
	// Hers, and the node's opt-out, are hers to write.
	g.Expect(patch(mallory, map[string]any{"example.com/owner": "mallory", protocol.DoNotDisrupt: "database"})).To(Succeed())

	// The operator's service account, and the cluster's administrators.
	operator := impersonating(t, "system:serviceaccount:"+manifests.Namespace+":kmaint-operator", "system:serviceaccounts",
		"system:serviceaccounts:"+manifests.Namespace)
	g.Expect(patch(operator, map[string]any{protocol.RebootApproved: "boot-0"})).To(Succeed())
	g.Expect(patch(operator, map[string]any{protocol.RebootApproved: nil, protocol.Admitted: nil})).To(Succeed())
	admin := impersonating(t, "kim", "system:masters")
	g.Expect(patch(admin, map[string]any{protocol.AdmissionHeld: protocol.Encode(protocol.Held{})})).To(Succeed())
	g.Expect(patch(admin, map[string]any{protocol.AdmissionHeld: nil})).To(Succeed())
}

// annotateNode merges annotations into the node's as c; a nil value
// removes one.
func annotateNode(t *testing.T, c client.Client, node string, annotations map[string]any) error {
	t.Helper()
	p := map[string]any{"metadata": map[string]any{"annotations": annotations}}
	return c.Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch(types.MergePatchType, mustJSON(t, p)))
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOperatorAnnotationsPolicyListsTheProtocols: the policy's list of the
// operator's annotations, in config/admission and in the chart, is the
// protocol's, so that an annotation added to the protocol is guarded too;
// with the rest of its list, it is all of the protocol's annotations, the
// only keys under kmaint.io/ the policy lets a Node have.
func TestOperatorAnnotationsPolicyListsTheProtocols(t *testing.T) {
	g := NewWithT(t)
	for _, u := range manifests.Kustomize(t, "default") {
		if u.GetKind() != "ValidatingAdmissionPolicy" || u.GetName() != "kmaint-operator-annotations" {
			continue
		}
		vars, _, _ := unstructured.NestedSlice(u.Object, "spec", "variables")
		listed := map[string][]string{}
		for _, v := range vars {
			m := v.(map[string]any)
			for _, q := range strings.Split(m["expression"].(string), "'") {
				if strings.HasPrefix(q, protocol.Prefix) {
					listed[m["name"].(string)] = append(listed[m["name"].(string)], q)
				}
			}
		}
		g.Expect(listed["operatorAnnotations"]).To(ConsistOf(protocol.OperatorAnnotations()))
		g.Expect(append(listed["operatorAnnotations"], listed["otherProtocolAnnotations"]...)).To(ConsistOf(protocol.NodeAnnotations()))
		return
	}
	t.Fatal("config/default has no policy kmaint-operator-annotations")
}
