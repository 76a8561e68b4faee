package install

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/manifests"
)

// TestOnlyTheProtocolsKeysUnderKmaintIO installs kmaint's admission
// policies for real: a user who may patch Nodes, as many add-ons may,
// cannot pad a Node with a key under kmaint.io/ that is not the
// protocol's (the operator's cache once kept each whole: 240 KiB on each
// of 2000 Nodes killed it at every start), nor change one already there,
// nor create a Node with one. A Node that carries one already (written
// before the policy, or by a cluster administrator) still takes every
// other write: hers, the daemon's, the operator's, and the key's removal.
// The node's opt-out is the protocol's, and anyone who may patch the Node
// may write it, of any size.
func TestOnlyTheProtocolsKeysUnderKmaintIO(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	installIdentities(t)
	const policy = "kmaint-operator-annotations"
	node := "protocol-keys"
	g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(node))).To(Succeed())
	labeller := userWith(t, "labeller", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch", "create"}})
	admin := impersonating(t, "kim", "system:masters")
	operator := impersonating(t, "system:serviceaccount:"+manifests.Namespace+":kmaint-operator", "system:serviceaccounts",
		"system:serviceaccounts:"+manifests.Namespace)
	daemon := clientWithToken(t, daemonOf(t, node))
	as := func(c client.Client, annotations map[string]any) error { return annotateNode(t, c, node, annotations) }
	pad := strings.Repeat("x", 240<<10)
	refused := func(what string, err error, key string) {
		t.Helper()
		expectRefusedBy(t, policy, what, err, "kmaint: "+key+" on a Node is not an annotation of the kmaint node protocol")
		if err != nil && !strings.Contains(err.Error(), "api/protocol/README.md") {
			t.Errorf("%s: the refusal does not say where the protocol's annotations are listed: %v", what, err)
		}
	}

	// The binding takes a moment to be enforced: wait for the first
	// refusal, with a new value each time.
	waitForPolicy(t, policy, func() error {
		return as(labeller, map[string]any{"kmaint.io/probe": time.Now().Format(time.RFC3339Nano)})
	})
	refused("a 240 KiB pad", as(labeller, map[string]any{"kmaint.io/pad": pad}), "kmaint.io/pad")
	refused("a small one", as(labeller, map[string]any{"kmaint.io/owner": "team-a"}), "kmaint.io/owner")
	refused("one of the operator's, misspelt", as(labeller, map[string]any{"kmaint.io/reboot-aproved": "boot-0"}), "kmaint.io/reboot-aproved")
	refused("a Node created with one", labeller.Create(ctx, gen.Node("protocol-keys-new", gen.Annotations("kmaint.io/pad", "x"))), "kmaint.io/pad")
	// Hers, the node's opt-out of any size, and Karpenter's are hers to
	// write.
	g.Expect(as(labeller, map[string]any{"example.com/pad": pad})).To(Succeed())
	g.Expect(as(labeller, map[string]any{"example.com/pad": nil, protocol.DoNotDisrupt: pad})).To(Succeed())
	g.Expect(as(labeller, map[string]any{protocol.DoNotDisrupt: nil, protocol.KarpenterDoNotDisrupt: "true"})).To(Succeed())

	// A Node that carries one already: put there by a cluster
	// administrator, who passes.
	g.Expect(as(admin, map[string]any{"kmaint.io/pad": pad})).To(Succeed())
	refused("the one already there, changed", as(labeller, map[string]any{"kmaint.io/pad": "y"}), "kmaint.io/pad")
	g.Expect(as(labeller, map[string]any{"example.com/owner": "team-a"})).To(Succeed(), "her other writes still pass")
	g.Expect(as(operator, map[string]any{protocol.DesiredConfig: "v2"})).To(Succeed(), "the operator's writes still pass")
	g.Expect(as(daemon, map[string]any{protocol.State: `{"phase":"idle"}`})).To(Succeed(), "the daemon's writes still pass")
	g.Expect(as(labeller, map[string]any{"kmaint.io/pad": nil})).To(Succeed(), "the one already there may go")
}
