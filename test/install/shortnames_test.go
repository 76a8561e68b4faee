package install

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/manifests"
)

// medik8sNodeMaintenance stands in for the CRD of medik8s's Node
// Maintenance Operator: its group, kind, plural and short name nm.
func medik8sNodeMaintenance() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "nodemaintenances.nodemaintenance.medik8s.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "nodemaintenance.medik8s.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "nodemaintenances", Singular: "nodemaintenance", Kind: "NodeMaintenance", ShortNames: []string{"nm"},
			},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1beta1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

// TestShortNamesBesideMedik8s: on a cluster that also runs medik8s's Node
// Maintenance Operator, `kubectl get nm` still means medik8s's objects, with
// no warning of a tie, and kmaint's short names (kmnm, mp, mpool, rp) and
// category (kmaint) mean kmaint's and nothing else; none of kmaint's short
// names is another served resource's.
func TestShortNamesBesideMedik8s(t *testing.T) {
	ctx := context.Background()
	medik8s := envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{medik8sNodeMaintenance()}}
	if _, err := envtest.InstallCRDs(bed.Config, medik8s); err != nil {
		t.Fatal(err)
	}
	// The other tests of the package share the API server.
	t.Cleanup(func() {
		if err := envtest.UninstallCRDs(bed.Config, medik8s); err != nil {
			t.Errorf("uninstall the medik8s stand-in: %v", err)
		}
	})
	theirs := &unstructured.Unstructured{}
	theirs.SetAPIVersion("nodemaintenance.medik8s.io/v1beta1")
	theirs.SetKind("NodeMaintenance")
	theirs.SetName("medik8s-drain-node-1")
	// Other tests of the package make NodeMaintenances of their own.
	theirs.SetLabels(map[string]string{"test": "short-names"})
	if err := bed.Client.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	ours := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: "kmaint-reboot-node-1", Labels: theirs.GetLabels()},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: "node-1", Reason: "short names"},
	}
	if err := bed.Client.Create(ctx, ours); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = bed.Client.Delete(ctx, theirs)
		_ = bed.Client.Delete(ctx, ours)
	})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := bed.WriteKubeconfig(kubeconfig, "install-admin", "system:masters"); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) (stdout, stderr string) {
		t.Helper()
		var o, e bytes.Buffer
		cmd := exec.CommandContext(ctx, manifests.Kubectl(t), append([]string{"--kubeconfig", kubeconfig}, args...)...)
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil {
			t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, o.String(), e.String())
		}
		return o.String(), e.String()
	}

	for name, want := range map[string]string{
		"nm":                         "nodemaintenance.nodemaintenance.medik8s.io/medik8s-drain-node-1",
		"kmnm":                       "nodemaintenance.kmaint.io/kmaint-reboot-node-1",
		"nodemaintenances.kmaint.io": "nodemaintenance.kmaint.io/kmaint-reboot-node-1",
		"nodemaintenances.nodemaintenance.medik8s.io": "nodemaintenance.nodemaintenance.medik8s.io/medik8s-drain-node-1",
	} {
		out, warn := kubectl("get", name, "-l", "test=short-names", "-o", "name")
		if strings.TrimSpace(out) != want {
			t.Errorf("kubectl get %s: %q, want %q", name, out, want)
		}
		if strings.Contains(warn, "could also match") {
			t.Errorf("kubectl get %s is ambiguous: %s", name, warn)
		}
	}
	out, _ := kubectl("get", "kmaint", "-l", "test=short-names", "-o", "name")
	if !strings.Contains(out, "nodemaintenance.kmaint.io/kmaint-reboot-node-1") || strings.Contains(out, "medik8s") {
		t.Errorf("kubectl get kmaint: %q, want kmaint's objects only", out)
	}

	// Every short name of every served resource, by the resource it names.
	resources, _ := kubectl("api-resources", "--no-headers", "-o", "wide")
	owners := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(resources), "\n") {
		f := strings.Fields(line)
		// NAME SHORTNAMES APIVERSION NAMESPACED KIND ...: SHORTNAMES is
		// empty for many, so it is told apart by the group/version after it.
		if len(f) < 3 || strings.Contains(f[1], "/") || f[1] == "v1" {
			continue
		}
		for _, short := range strings.Split(f[1], ",") {
			owners[short] = append(owners[short], f[0]+"."+f[2])
		}
	}
	for _, short := range []string{"kmnm", "mp", "mpool", "rp"} {
		if len(owners[short]) != 1 || !strings.Contains(owners[short][0], "kmaint.io/") {
			t.Errorf("short name %s names %v, want one kmaint kind", short, owners[short])
		}
	}
}
