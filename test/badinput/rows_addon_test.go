package badinput

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/gen"
)

// The rows below act as an add-on that may patch and create Nodes, as
// node-feature-discovery, labellers, autoscalers and CSI drivers usually
// may.
const addonSurface = "Node/patch-nodes add-on"

// What the policy kmaint-operator-annotations says of a key under
// kmaint.io/ that is not the protocol's.
const notTheProtocols = "on a Node is not an annotation of the kmaint node protocol"

func addonRows() []row {
	var addon client.Client
	// as returns the add-on's client, made on the first row: a user whom
	// a ClusterRole of its own lets get, patch and create Nodes.
	as := func(t *testing.T) client.Client {
		if addon == nil {
			addon = addonClient(t)
		}
		return addon
	}
	// annotated sends one annotation to the open pool's first node, and
	// removes it, as a cluster administrator, should it get in.
	annotated := func(name, key, value string) row {
		return row{surface: addonSurface, name: name, want: refusedNaming(key + " " + notTheProtocols),
			send: func(t *testing.T, e *env) (shown, error) {
				node := openNodes[0]
				t.Cleanup(func() { _ = patchAs(bed.Client, node, annotate(key, "")) })
				return nil, patchAs(as(t), node, annotate(key, value))
			}}
	}
	return []row{
		annotated("a 240 KiB key of its own under kmaint.io/", "kmaint.io/pad", strings.Repeat("x", 240<<10)),
		annotated("a small key of its own under kmaint.io/", "kmaint.io/owner", "team-a"),
		annotated("an operator annotation misspelt", "kmaint.io/reboot-aproved", "boot-0"),
		{surface: addonSurface, name: "a Node created with a key of its own under kmaint.io/", want: refusedNaming("kmaint.io/pad " + notTheProtocols),
			send: func(t *testing.T, e *env) (shown, error) {
				n := gen.Node("matrix-addon-new", gen.Annotations("kmaint.io/pad", "x"))
				t.Cleanup(func() {
					_ = bed.Client.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}})
				})
				return nil, as(t).Create(context.Background(), n)
			}},
	}
}

// patchAs merge-patches a node as c.
func patchAs(c client.Client, node, patch string) error {
	return c.Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// addonClient makes the add-on's user and returns its client, once RBAC
// lets it read Nodes: a refusal must come from admission, not from a
// binding not yet in force.
func addonClient(t *testing.T) client.Client {
	t.Helper()
	c := userClient(t, "matrix-addon", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch", "create"}})
	NewWithT(t).Eventually(func() error { return c.Get(context.Background(), client.ObjectKey{Name: openNodes[0]}, &corev1.Node{}) }).
		WithTimeout(30*time.Second).Should(Succeed(), "the add-on may read Nodes")
	return c
}
