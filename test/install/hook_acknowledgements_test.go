package install

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/manifests"
)

// TestHookAcknowledgementsNeedTheirRBAC installs kmaint's admission
// policies for real: a user who may patch Nodes cannot acknowledge a hook,
// nor take an acknowledgement away; the hook's owner, whom RBAC lets update
// hookacknowledgements.kmaint.io of that hook's name, may acknowledge that
// hook and no other; the operator removes them when an admission ends.
func TestHookAcknowledgementsNeedTheirRBAC(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	installIdentities(t)
	const policy = "kmaint-hook-acknowledgements"
	node := "hook-acknowledgements"
	g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(node))).To(Succeed())
	patchAs := func(c client.Client, annotations map[string]any) error { return annotateNode(t, c, node, annotations) }
	nodes := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}}
	mallory := userWith(t, "hook-mallory", nodes)
	dba := userWith(t, "hook-dba", nodes)
	g.Expect(bed.Client.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test-hook-dba-ack"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"kmaint.io"}, Resources: []string{"hookacknowledgements"}, ResourceNames: []string{"db-stepdown"}, Verbs: []string{"update"},
	}}})).To(Succeed())
	g.Expect(bed.Client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "test-hook-dba-ack"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "test-hook-dba-ack"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "hook-dba"}},
	})).To(Succeed())
	ack := protocol.AckPrefix + "db-stepdown"

	// The binding takes a moment to be enforced: a new value each time (a
	// write let through before would make the same one a no-op).
	waitForPolicy(t, policy, func() error { return patchAs(mallory, map[string]any{ack: time.Now().Format(time.RFC3339Nano)}) })
	expectRefusedBy(t, policy, "a forged acknowledgement", patchAs(mallory, map[string]any{ack: "forged-again"}), "kmaint: "+ack+" on a Node opens a hook")
	// The owner acknowledges its hook, and only its hook.
	g.Expect(patchAs(dba, map[string]any{ack: "token"})).To(Succeed())
	expectRefusedBy(t, policy, "another hook's acknowledgement", patchAs(dba, map[string]any{protocol.AckPrefix + "storage-drain": "token"}),
		"kmaint: "+protocol.AckPrefix+"storage-drain on a Node")
	expectRefusedBy(t, policy, "the acknowledgement taken away", patchAs(mallory, map[string]any{ack: nil}), "kmaint: "+ack)
	// Other annotations stay anyone's who may patch Nodes.
	g.Expect(patchAs(mallory, map[string]any{"example.com/owner": "mallory"})).To(Succeed())
	// The operator removes it when the admission ends.
	operator := impersonating(t, "system:serviceaccount:"+manifests.Namespace+":kmaint-operator", "system:serviceaccounts",
		"system:serviceaccounts:"+manifests.Namespace)
	g.Expect(patchAs(operator, map[string]any{ack: nil})).To(Succeed())
}
