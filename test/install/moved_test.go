package install

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/test/gen"
)

// TestDaemonMovedToAnotherNamespaceStaysConfined: config/default installed
// into another namespace by hand (the policies' expressions are not
// rewritten) still confines its daemon to its node; a policy that named
// kmaint-system would have let it write any node.
func TestDaemonMovedToAnotherNamespaceStaysConfined(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	installIdentities(t)
	const moved = "kmaint-moved"
	nodeA, nodeB := "moved-a", "moved-b"
	for _, name := range []string{nodeA, nodeB} {
		g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(name))).To(Succeed())
	}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: moved}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: moved, Name: "kmaint-daemon"}},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "kmaint-daemon-moved"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kmaint-daemon"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: moved, Name: "kmaint-daemon"}},
		},
	} {
		g.Expect(bed.Client.Create(ctx, o)).To(Succeed())
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: moved, Name: "kmaint-daemon-moved-a"},
		Spec:       corev1.PodSpec{ServiceAccountName: "kmaint-daemon", NodeName: nodeA, Containers: []corev1.Container{{Name: "daemon", Image: "kmaint"}}},
	}
	g.Expect(bed.Client.Create(ctx, pod)).To(Succeed())
	daemon := clientWithToken(t, podToken(t, pod))
	patch := func(node string) error {
		raw := []byte(`{"metadata":{"annotations":{"` + protocol.CurrentConfig + `":"v2"}}}`)
		return daemon.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch(types.MergePatchType, raw))
	}
	waitForPolicy(t, policyName, func() error { return patch(nodeB) })
	expectRefusedByPolicy(t, "another node, from the moved namespace", patch(nodeB), "may only update its own Node")
	g.Expect(patch(nodeA)).To(Succeed(), "its own node")
}
