package badinput

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
)

// The rows below act as a team that may edit MaintenancePools and patch
// Nodes, and may use only its own label (team=matrix) in a pool's selector
// and acknowledge only its own pool's hook: what a team's editor, or an
// add-on with those rights, can try.
const (
	teamSurface = "MaintenancePool, Node/a team"
	teamUser    = "matrix-team"
	// teamLabel is the one label the team may point a pool at.
	teamLabel = "team=matrix"
	// teamPool and teamHook are the hook the team may acknowledge.
	teamPool, teamHook = "matrix-team-pool", "stepdown"
)

// teamClient returns a client of the team, once RBAC lets it read pools.
func teamClient(t *testing.T) client.Client {
	t.Helper()
	c := userClient(t, teamUser,
		rbacv1.PolicyRule{APIGroups: []string{"kmaint.io"}, Resources: []string{"maintenancepools"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}},
		rbacv1.PolicyRule{APIGroups: []string{"kmaint.io"}, Resources: []string{"nodeselectors"}, ResourceNames: []string{teamLabel}, Verbs: []string{"use"}},
		rbacv1.PolicyRule{APIGroups: []string{"kmaint.io"}, Resources: []string{"hookacknowledgements"}, ResourceNames: []string{teamPool + "/" + teamHook}, Verbs: []string{"update"}})
	NewWithT(t).Eventually(func() error { return c.Get(context.Background(), client.ObjectKey{Name: ownNode}, &corev1.Node{}) }).
		WithTimeout(30*time.Second).Should(Succeed(), "the team may read Nodes")
	return c
}

// teamRows are what the team may not do: point a pool at nodes that are
// not its own, or take the default pool's; open a hook that is not its
// own, or bloat a Node with an acknowledgement.
func teamRows() []row {
	pool := func(name, says string, spec map[string]any) row {
		return row{surface: teamSurface, name: name, want: refusedNaming(says), send: func(t *testing.T, _ *env) (shown, error) {
			u := object("MaintenancePool", rowName("team", name), spec)
			if name == "the default pool's object" {
				u.SetName("default")
			}
			err := teamClient(t).Create(context.Background(), u)
			if err == nil {
				t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), u) })
			}
			return nil, err
		}}
	}
	labels := func(kv ...string) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return map[string]any{"nodeSelector": map[string]any{"matchLabels": m}}
	}
	nine := []string{"team", "matrix"}
	for i := range 8 {
		nine = append(nine, fmt.Sprintf("l%d", i), "x")
	}
	const selectors = "ValidatingAdmissionPolicy 'kmaint-pool-selectors'"
	ack := func(name, says, value, record string) row {
		return row{surface: teamSurface, name: name, want: refusedNaming(says), send: func(t *testing.T, _ *env) (shown, error) {
			patch := map[string]any{protocol.AckPrefix + teamHook: value}
			t.Cleanup(func() {
				_ = patchAnnotations(bed.Client, ownNode, map[string]any{protocol.Hook: nil, protocol.AckPrefix + teamHook: nil})
			})
			if record != "" {
				// The record the operator writes, as the cluster admin.
				if err := patchAnnotations(bed.Client, ownNode, map[string]any{protocol.Hook: record}); err != nil {
					t.Fatal(err)
				}
			}
			return nil, patchAnnotations(teamClient(t), ownNode, patch)
		}}
	}
	record := func(pool string) string {
		return protocol.Encode(protocol.HookRecord{Pool: pool, Point: protocol.BeforeDrain, BootID: "boot-0", Token: strings.Repeat("a", 24),
			Hooks: []protocol.HookProgress{{Name: teamHook, Attempt: 1}}})
	}
	return []row{
		pool("another team's nodes", selectors, labels("team", "search")),
		pool("every node", "this one requires no single label: it needs *", map[string]any{"nodeSelector": map[string]any{}}),
		pool("every node but another team's", "it needs *", map[string]any{"nodeSelector": selectorOf(expr("team", "NotIn", "search"))}),
		pool("its own label among nine", "more than the 8 judged", labels(nine...)),
		pool("the default pool's object", "only an identity allowed to use nodeselectors.kmaint.io named * may create it", map[string]any{}),
		ack("the same hook of another pool", "named other-pool/"+teamHook, strings.Repeat("a", 24), record("other-pool")),
		ack("an acknowledgement of 65 bytes", "more than 64 is refused", strings.Repeat("a", 65), record(teamPool)),
		ack("an acknowledgement with no hook waiting", "the node waits at no hook", strings.Repeat("a", 24), ""),
	}
}

// patchAnnotations merges annotations into node's as c; nil removes one.
func patchAnnotations(c client.Client, node string, annotations map[string]any) error {
	raw := fmt.Sprintf(`{"metadata":{"annotations":%s}}`, protocol.Encode(annotations))
	return c.Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch(types.MergePatchType, []byte(raw)))
}
