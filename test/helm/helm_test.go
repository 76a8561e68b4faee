package helm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kmaint/kmaint/test/harness"
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
	objs, err := decode(helm(t, args...))
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	return objs
}

// kubectl finds the kubectl cached next to kube-apiserver, as test/install.
func kubectl(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		if p := filepath.Join(dir, "kubectl"); fileExists(p) {
			return p
		}
	}
	matches, _ := filepath.Glob(filepath.Join(testbed.RepoRoot(), "bin", "k8s", "*", "kubectl"))
	if len(matches) == 0 {
		t.Fatal("no kubectl in KUBEBUILDER_ASSETS or bin/k8s/*/: run hack/envtest-assets.sh bin (make test does)")
	}
	return matches[len(matches)-1]
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// kustomize returns the objects `kubectl kustomize config/<dir>` builds.
func kustomize(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	cmd := exec.Command(kubectl(t), "kustomize", filepath.Join(testbed.RepoRoot(), "config", dir))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/%s: %v\n%s", dir, err, stderr.String())
	}
	objs, err := decode(out)
	if err != nil {
		t.Fatalf("config/%s: %v", dir, err)
	}
	return objs
}

func decode(manifests []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode rendered objects: %w", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// id names an object as kubectl does: Kind/namespace/name.
func id(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + "/" + u.GetName()
	}
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// byID indexes objects by id, failing on duplicates (kubectl apply would
// apply the second over the first).
func byID(t testing.TB, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	m := make(map[string]*unstructured.Unstructured, len(objs))
	for _, u := range objs {
		if _, dup := m[id(u)]; dup {
			t.Errorf("%s rendered twice", id(u))
		}
		m[id(u)] = u
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
