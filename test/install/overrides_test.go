package install

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	plugin "github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/manifests"
)

// requester is what a person who may ask for reboots is granted: create
// and edit NodeMaintenances, read Nodes (the plugin checks the node).
var requester = []rbacv1.PolicyRule{
	{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"nodemaintenances"}, Verbs: []string{"create", "update", "patch", "get", "list"}},
	{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
}

// userWithRules is userWith for several rules.
func userWithRules(t *testing.T, name string, rules ...rbacv1.PolicyRule) client.Client {
	t.Helper()
	grant(t, "test-user-"+name, name, rules...)
	return impersonating(t, name)
}

// TestRequestOverridesNeedTheirRBAC installs kmaint's admission policies
// for real: a person who may create NodeMaintenances asks for reboots, and
// they wait for the windows and freezes; setting ignoreWindows or
// ignoreFreezes, on create or later, needs the right to use
// maintenanceoverrides.kmaint.io of that name, each on its own. A request
// that keeps its override may still be labelled; dropping one needs
// nothing; the cluster's administrators pass; the operator's records,
// which carry neither, go through; the plugin says which flag needs which
// right.
func TestRequestOverridesNeedTheirRBAC(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	installIdentities(t)
	const policy = "kmaint-request-overrides"
	const node = "overrides-a"
	g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(node))).To(Succeed())
	nm := func(name string, windows, freezes bool) *v1alpha1.NodeMaintenance {
		return &v1alpha1.NodeMaintenance{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: node, Reason: "kernel update", IgnoreWindows: windows, IgnoreFreezes: freezes},
		}
	}
	created := func(c client.Client, o *v1alpha1.NodeMaintenance) error {
		err := c.Create(ctx, o)
		if err == nil {
			t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), o) })
		}
		return err
	}
	patch := func(c client.Client, o *v1alpha1.NodeMaintenance, p string) error {
		return c.Patch(ctx, o.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(p)))
	}
	const windowsRefused = "kmaint: spec.ignoreWindows lets a request be admitted outside its maintenance windows, and only an identity " +
		"allowed to use maintenanceoverrides.kmaint.io named ignoreWindows may set it; "
	const freezesRefused = "kmaint: spec.ignoreFreezes lets a request be admitted during a freeze, and only an identity " +
		"allowed to use maintenanceoverrides.kmaint.io named ignoreFreezes may set it; "

	jane := userWithRules(t, "overrides-jane", requester...)
	oncall := userWithRules(t, "overrides-oncall", append(requester, rbacv1.PolicyRule{APIGroups: []string{v1alpha1.GroupVersion.Group},
		Resources: []string{v1alpha1.OverridesResource}, ResourceNames: []string{"ignoreWindows"}, Verbs: []string{v1alpha1.OverrideVerb}})...)
	waitForPolicy(t, policy, func() error {
		return created(jane, nm(fmt.Sprintf("overrides-probe-%d", time.Now().UnixNano()), true, false))
	})

	t.Run("a person without the right", func(t *testing.T) {
		expectRefusedBy(t, policy, "ignoreWindows", created(jane, nm("overrides-jane-windows", true, false)), windowsRefused+"overrides-jane may not")
		expectRefusedBy(t, policy, "ignoreFreezes", created(jane, nm("overrides-jane-freezes", false, true)), freezesRefused+"overrides-jane may not")
		// A request that waits is anyone's who may ask for reboots; an
		// override added to it later is refused as at its creation.
		plain := nm("overrides-jane-plain", false, false)
		if err := created(jane, plain); err != nil {
			t.Fatalf("a request without overrides: %v", err)
		}
		expectRefusedBy(t, policy, "ignoreWindows added", patch(jane, plain, `{"spec":{"ignoreWindows":true}}`), windowsRefused)
		expectRefusedBy(t, policy, "ignoreFreezes added", patch(jane, plain, `{"spec":{"ignoreFreezes":true}}`), freezesRefused)
	})

	t.Run("the on-call, allowed ignoreWindows only", func(t *testing.T) {
		emergency := nm("overrides-oncall-windows", true, false)
		if err := created(oncall, emergency); err != nil {
			t.Fatalf("ignoreWindows with its right: %v", err)
		}
		expectRefusedBy(t, policy, "ignoreFreezes without its right", created(oncall, nm("overrides-oncall-freezes", false, true)), freezesRefused)
		expectRefusedBy(t, policy, "both, with the right to one", created(oncall, nm("overrides-oncall-both", true, true)), freezesRefused)
		// Others may label it, as long as the override stays as it was,
		// and drop it: the request then waits like any other.
		if err := patch(jane, emergency, `{"metadata":{"labels":{"team":"infra"}},"spec":{"reason":"stuck NIC firmware"}}`); err != nil {
			t.Errorf("a person editing a request whose override stays: %v", err)
		}
		if err := patch(jane, emergency, `{"spec":{"ignoreWindows":false}}`); err != nil {
			t.Errorf("a person dropping the override: %v", err)
		}
		expectRefusedBy(t, policy, "the override put back by someone without the right", patch(jane, emergency, `{"spec":{"ignoreWindows":true}}`), windowsRefused)
	})

	t.Run("administrators and kmaint's own writers", func(t *testing.T) {
		if err := created(bed.Client, nm("overrides-admin-both", true, true)); err != nil {
			t.Errorf("a cluster administrator (system:masters): %v", err)
		}
		// The operator records requests raised on the node and by its
		// policies, with neither override, and updates no spec.
		op := clientWithToken(t, operatorToken(t))
		record := nm("overrides-a-host-1", false, false)
		record.Spec.Source = v1alpha1.SourceHost
		record.Labels = map[string]string{v1alpha1.RequestIDLabel: "1", v1alpha1.BootIDLabel: "boot-0"}
		if err := created(op, record); err != nil {
			t.Errorf("the operator's record of a host request: %v", err)
		}
		// Nor may the operator's account pass windows: it never sets them,
		// and a token taken from it would otherwise reboot through freezes.
		forged := nm("overrides-a-host-2", true, true)
		forged.Spec.Source = v1alpha1.SourceHost
		expectRefusedBy(t, policy, "overrides by the operator's account", created(op, forged),
			"system:serviceaccount:"+manifests.Namespace+":kmaint-operator may not")
	})

	t.Run("the plugin", func(t *testing.T) {
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		g.Expect(bed.WriteKubeconfig(kubeconfig, "overrides-jane")).To(Succeed())
		kubectlKmaint := func(args ...string) error {
			var stdout, stderr bytes.Buffer
			root := plugin.NewCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &stdout, ErrOut: &stderr})
			root.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
			root.SilenceUsage, root.SilenceErrors = true, true
			return root.ExecuteContext(ctx)
		}
		// Another node: the requests above are open on the first, and the
		// plugin would refuse a second.
		other := "overrides-b"
		g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(other))).To(Succeed())
		err := kubectlKmaint("request", other, "--reason", "CVE-2026-1234", "--ignore-freezes", "--ignore-windows")
		g.Expect(err).To(MatchError(HavePrefix("refused: --ignore-windows needs the right to use maintenanceoverrides.kmaint.io named ignoreWindows, which you lack; " +
			"ask a cluster admin (config/README.md, \"Who can pass windows and freezes\"). Without --ignore-windows the request waits")))
		g.Expect(err.Error()).NotTo(ContainSubstring("ValidatingAdmissionPolicy"), "the plugin says it in a person's words")
	})
}
