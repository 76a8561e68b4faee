package realkmaint

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/realcluster"
	"github.com/kmaint/kmaint/test/testbed"
)

// approvalsOnlyFromTheGate: a node asks for a reboot, held by its opt-out.
// A user who may patch Nodes (as many add-ons may) writes an approval of
// its boot and an admission: the real API server refuses both, naming
// kmaint. The cluster's administrator, who passes every admission, writes
// a bare approval: the real daemon on the node refuses it, says so in an
// event, and the node does not reboot.
func approvalsOnlyFromTheGate(t *testing.T, c *realcluster.Cluster, kc client.Client) {
	g := NewWithT(t)
	ctx := context.Background()
	target := c.Nodes()[len(c.Nodes())-1]
	bootsBefore := bootCounts(c)
	boot, err := target.BootID(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	patch := func(c client.Client, annotations map[string]any) error {
		raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
		g.Expect(err).NotTo(HaveOccurred())
		return c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: target.Name()}}, client.RawPatch(types.MergePatchType, raw))
	}

	// The node opts out first: its request waits, whatever the gate does.
	g.Expect(patch(kc, map[string]any{protocol.DoNotDisrupt: "testing forged approvals"})).To(Succeed())
	out, err := target.Exec(ctx, "systemd-run", "--wait", "--pipe", "--quiet", "--collect",
		HostCommand, "request-reboot", "a request a forged approval tries to act on")
	g.Expect(err).NotTo(HaveOccurred(), "request-reboot as root: %s", out)
	m := regexp.MustCompile(`request ([0-9a-f-]{36})`).FindStringSubmatch(string(out))
	g.Expect(m).NotTo(BeNil(), "request-reboot printed no request id: %s", out)
	g.Eventually(func(g Gomega) map[string]string {
		var node corev1.Node
		g.Expect(kc.Get(ctx, client.ObjectKey{Name: target.Name()}, &node)).To(Succeed())
		return node.Annotations
	}, timeout, time.Second).Should(HaveKey(protocol.RebootRequested))

	mallory := nodePatcher(t, g, c, "mallory")
	admission := protocol.Encode(protocol.Admission{BootID: boot, Time: time.Now()})
	for what, annotations := range map[string]map[string]any{
		"an approval":               {protocol.RebootApproved: boot},
		"an admission and approval": {protocol.Admitted: admission, protocol.RebootApproved: boot},
		"a cordon marker":           {protocol.Cordoned: "true"},
	} {
		err := patch(mallory, annotations)
		g.Expect(err).To(HaveOccurred(), "%s written by a user who may patch Nodes", what)
		g.Expect(err.Error()).To(And(ContainSubstring("kmaint-operator-annotations"), ContainSubstring("written only by the kmaint operator")), what)
	}

	// The administrator's bare approval reaches the node; its daemon
	// refuses it.
	g.Expect(patch(kc, map[string]any{protocol.RebootApproved: boot})).To(Succeed())
	bed := &testbed.Bed{Client: kc}
	g.Eventually(func(g Gomega) []string {
		return harness.EventReasons(g, bed, "Node", target.Name(), corev1.EventTypeWarning)
	}, timeout, time.Second).Should(ContainElement("ApprovalRefused"))
	g.Consistently(func(g Gomega) {
		var node corev1.Node
		g.Expect(kc.Get(ctx, client.ObjectKey{Name: target.Name()}, &node)).To(Succeed())
		var state protocol.DaemonState
		_, err := protocol.Decode(&node, protocol.State, &state)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(state.Phase).To(Equal(protocol.DaemonRequested))
		g.Expect(state.Message).To(ContainSubstring("refused"))
		g.Expect(target.Boots()).To(Equal(bootsBefore[target.Name()]), "no reboot")
	}, 20*time.Second, 2*time.Second).Should(Succeed())
	expectRebootedOnce(g, c, bootsBefore)

	// Put the node back: no approval, no opt-out; its request is cancelled.
	g.Expect(patch(kc, map[string]any{protocol.RebootApproved: nil})).To(Succeed())
	out, err = target.Exec(ctx, "systemd-run", "--wait", "--pipe", "--quiet", "--collect", HostCommand, "cancel-reboot", m[1])
	g.Expect(err).NotTo(HaveOccurred(), "cancel-reboot %s: %s", m[1], out)
	// The opt-out goes only once the node no longer asks: before, the gate
	// would admit the request the daemon has not withdrawn yet.
	g.Eventually(func(g Gomega) {
		var node corev1.Node
		g.Expect(kc.Get(ctx, client.ObjectKey{Name: target.Name()}, &node)).To(Succeed())
		s, _ := protocol.Read(&node)
		if cur := s.Current(); cur != nil {
			g.Expect(cur.Has(m[1])).To(BeFalse(), "request %s still on the node", m[1])
		}
	}, timeout, time.Second).Should(Succeed())
	g.Expect(patch(kc, map[string]any{protocol.DoNotDisrupt: nil})).To(Succeed())
}

// nodePatcher is a user who may get and patch Nodes, as many add-ons may.
func nodePatcher(t *testing.T, g Gomega, c *realcluster.Cluster, name string) client.Client {
	t.Helper()
	ctx := context.Background()
	admin, err := client.New(c.RestConfig(), client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "node-patcher-" + name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "node-patcher-" + name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: name}},
	}
	for _, o := range []client.Object{role, binding} {
		g.Expect(admin.Create(ctx, o)).To(Succeed())
	}
	cfg := rest.CopyConfig(c.RestConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: name, Groups: []string{"system:authenticated"}}
	mc, err := client.New(cfg, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	return mc
}
