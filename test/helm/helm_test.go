package helm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/manifests"
	"github.com/kmaint/kmaint/test/testbed"
)

var bed *testbed.Bed

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &bed)) }

// namespace is the release namespace of every render: config/default's.
const namespace = "kmaint-system"

func chartDir() string { return filepath.Join(testbed.RepoRoot(), "config", "helm", "kmaint") }

// helmAssets finds the directory hack/helm-assets.sh fills: helm and the
// Prometheus Operator's CRDs. HELM_ASSETS wins, else the newest under
// bin/helm.
func helmAssets(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv("HELM_ASSETS"); dir != "" {
		return dir
	}
	matches, _ := filepath.Glob(filepath.Join(testbed.RepoRoot(), "bin", "helm", "*", "helm"))
	if len(matches) == 0 {
		t.Fatal("no helm in HELM_ASSETS or bin/helm/*/: run hack/helm-assets.sh bin (make test does)")
	}
	return filepath.Dir(matches[len(matches)-1])
}

// helm runs helm with its cache, config and data in a temporary directory,
// so that no test reads or writes the user's repositories or plugins.
func helm(t testing.TB, args ...string) []byte {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(filepath.Join(helmAssets(t), "helm"), args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// template renders the chart as release "kmaint" in namespace, with the
// values in YAML (none if empty) on top of values.yaml.
func template(t testing.TB, namespace, values string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", "kmaint", chartDir(), "--namespace", namespace}
	if values != "" {
		f := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(f, []byte(values), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--values", f)
	}
	objs, err := manifests.Decode(helm(t, args...))
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	return objs
}

// byID indexes objects by id, failing on duplicates (kubectl apply would
// apply the second over the first).
func byID(t testing.TB, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	m := make(map[string]*unstructured.Unstructured, len(objs))
	for _, u := range objs {
		if _, dup := m[manifests.ID(u)]; dup {
			t.Errorf("%s rendered twice", manifests.ID(u))
		}
		m[manifests.ID(u)] = u
	}
	return m
}

// ids lists the ids of objects, sorted.
func ids[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
