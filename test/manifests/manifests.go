package manifests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/testbed"
)

// Kubectl returns the kubectl beside the test API server, failing the test
// when there is none.
func Kubectl(t testing.TB) string {
	t.Helper()
	k, err := testbed.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Kustomize returns the objects `kubectl kustomize config/<dir>` builds, in
// its order.
func Kustomize(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	cmd := exec.Command(Kubectl(t), "kustomize", filepath.Join(testbed.RepoRoot(), "config", dir))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/%s: %v\n%s", dir, err, stderr.String())
	}
	objs, err := Decode(out)
	if err != nil {
		t.Fatalf("config/%s: %v", dir, err)
	}
	return objs
}

// Decode reads a stream of YAML or JSON documents into objects, skipping
// empty ones.
func Decode(manifests []byte) ([]*unstructured.Unstructured, error) {
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

// ID names an object as kubectl does: Kind/namespace/name.
func ID(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + "/" + u.GetName()
	}
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// Apply server-side applies the object as owner, taking its fields over as
// kubectl apply --server-side --force-conflicts does: for real or, with
// client.DryRunAll, only through admission and validation.
func Apply(ctx context.Context, c client.Client, owner string, u *unstructured.Unstructured, opts ...client.ApplyOption) error {
	opts = append([]client.ApplyOption{client.FieldOwner(owner), client.ForceOwnership}, opts...)
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), opts...); err != nil {
		return fmt.Errorf("apply %s: %w", ID(u), err)
	}
	return nil
}
