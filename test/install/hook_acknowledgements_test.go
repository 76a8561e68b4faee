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

// grantAcknowledgements lets user acknowledge the named hooks
// (hookacknowledgements.kmaint.io, pool/hook).
func grantAcknowledgements(t *testing.T, user string, names ...string) {
	t.Helper()
	grant(t, "test-ack-"+user, user, rbacv1.PolicyRule{
		APIGroups: []string{"kmaint.io"}, Resources: []string{"hookacknowledgements"}, ResourceNames: names, Verbs: []string{"update"}})
}

// TestHookAcknowledgementsNeedTheirRBAC installs kmaint's admission
// policies for real: a user who may patch Nodes cannot acknowledge a hook,
// nor take an acknowledgement away while the node waits at it; the hook's
// owner, whom RBAC lets update hookacknowledgements.kmaint.io named
// <pool>/<hook>, may acknowledge that hook of that pool and no other: not
// another hook, nor the same hook of another pool. A grant of the hook's
// name alone opens only a record written before records named their pool.
// An acknowledgement opens nothing on a node that waits at no hook, so it
// is not written there; a value longer than a token's bound is refused to
// everyone; the operator removes them when an admission ends.
func TestHookAcknowledgementsNeedTheirRBAC(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	installIdentities(t)
	const policy = "kmaint-hook-acknowledgements"
	node := "hook-acknowledgements"
	g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(node))).To(Succeed())
	patchAs := func(c client.Client, annotations map[string]any) error { return annotateNode(t, c, node, annotations) }
	// The record the operator writes (the cluster admin writes it here):
	// the node waits at hooks of pool.
	waitAt := func(pool string) {
		t.Helper()
		rec := protocol.HookRecord{Pool: pool, Point: protocol.BeforeDrain, BootID: "boot-0", Token: "0123456789abcdef01234567", Since: time.Now(),
			Hooks: []protocol.HookProgress{{Name: "db-stepdown", Attempt: 1}}}
		g.Expect(patchAs(bed.Client, map[string]any{protocol.Hook: protocol.Encode(rec)})).To(Succeed())
	}
	nodes := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}}
	mallory := userWith(t, "hook-mallory", nodes)
	dba := userWith(t, "hook-dba", nodes)
	grantAcknowledgements(t, "hook-dba", "databases/db-stepdown")
	old := userWith(t, "hook-old-grant", nodes)
	grantAcknowledgements(t, "hook-old-grant", "db-stepdown")
	ack := protocol.AckPrefix + "db-stepdown"
	refused := func(what string, err error, why string) {
		t.Helper()
		expectRefusedBy(t, policy, what, err, why)
	}

	waitAt("databases")
	// The binding takes a moment to be enforced: a new value each time (a
	// write let through before would make the same one a no-op).
	waitForPolicy(t, policy, func() error { return patchAs(mallory, map[string]any{ack: time.Now().Format(time.RFC3339Nano)}) })
	refused("a forged acknowledgement", patchAs(mallory, map[string]any{ack: "forged-again"}),
		"only an identity allowed to update hookacknowledgements.kmaint.io named databases/db-stepdown may write it; hook-mallory may not")
	// The owner acknowledges its hook of its pool, and only that.
	g.Expect(patchAs(dba, map[string]any{ack: "token"})).To(Succeed())
	refused("another hook's acknowledgement", patchAs(dba, map[string]any{protocol.AckPrefix + "storage-drain": "token"}),
		"named databases/storage-drain may write it")
	refused("the acknowledgement taken away", patchAs(mallory, map[string]any{ack: nil}), "kmaint: "+ack)
	refused("a grant of the hook's name alone", patchAs(old, map[string]any{ack: "token-2"}), "named databases/db-stepdown")
	refused("an acknowledgement too long for a token", patchAs(dba, map[string]any{ack: strings.Repeat("x", 65)}),
		"whose value is the token of the hook it opens (24 characters); more than 64 is refused")
	refused("three at once", patchAs(bed.Client, map[string]any{ack + "-1": "t", ack + "-2": "t", ack + "-3": "t"}),
		"a write may change at most two acknowledgements")

	// The same hook of another pool is another right.
	waitAt("web")
	refused("the hook of the same name in another pool", patchAs(dba, map[string]any{ack: "token-3"}),
		"named web/db-stepdown may write it; hook-dba may not")

	// A record written before records named their pool: the grant of the
	// hook's name opens it, as it did before the upgrade.
	g.Expect(patchAs(bed.Client, map[string]any{protocol.Hook: `{"point":"beforeDrain","bootID":"boot-0","token":"x","since":"2026-12-07T00:00:00Z","hooks":[]}`})).To(Succeed())
	g.Expect(patchAs(old, map[string]any{ack: "token-4"})).To(Succeed())
	refused("the pooled grant on a record of no pool", patchAs(dba, map[string]any{ack: "token-5"}), "named db-stepdown may write it")

	// No hook waits: nothing to acknowledge, and taking one away harms
	// nothing.
	g.Expect(patchAs(bed.Client, map[string]any{protocol.Hook: nil})).To(Succeed())
	refused("an acknowledgement of no hook", patchAs(dba, map[string]any{ack: "token-6"}), "the node waits at no hook: there is nothing to acknowledge")
	g.Expect(patchAs(mallory, map[string]any{ack: nil})).To(Succeed())

	// Other annotations stay anyone's who may patch Nodes.
	g.Expect(patchAs(mallory, map[string]any{"example.com/owner": "mallory"})).To(Succeed())
	// The operator removes them when the admission ends.
	waitAt("databases")
	g.Expect(patchAs(dba, map[string]any{ack: "token-7"})).To(Succeed())
	operator := impersonating(t, "system:serviceaccount:"+manifests.Namespace+":kmaint-operator", "system:serviceaccounts",
		"system:serviceaccounts:"+manifests.Namespace)
	g.Expect(patchAs(operator, map[string]any{ack: nil, protocol.Hook: nil})).To(Succeed())
}
