package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/testbed"
)

// kubectl finds the kubectl cached next to kube-apiserver: the one whose
// `kubectl kustomize` and `kubectl apply --server-side` make deploy runs.
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

// render returns the objects `kubectl kustomize` builds from a directory
// under config/, in its order.
func render(t testing.TB, dir string) []*unstructured.Unstructured {
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

// apply server-side applies the object as make deploy would, for real or,
// with client.DryRunAll, only through admission and validation.
func apply(ctx context.Context, u *unstructured.Unstructured, opts ...client.ApplyOption) error {
	opts = append([]client.ApplyOption{client.FieldOwner("kmaint-install-test"), client.ForceOwnership}, opts...)
	if err := bed.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), opts...); err != nil {
		return fmt.Errorf("apply %s: %w", id(u), err)
	}
	return nil
}
