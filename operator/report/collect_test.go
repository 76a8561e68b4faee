package report

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kmaint/kmaint/operator/api/v1alpha1"
)

// TestCollect lists a real API server's objects and builds their report.
// It runs plain envtest with kmaint's CRDs rather than test/testbed, which
// imports the whole operator.
func TestCollect(t *testing.T) {
	assets, err := assetsDir()
	if err != nil {
		t.Fatal(err)
	}
	root := repoRoot()
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest from %s: %v", assets, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	items, mpools, nodes, now := fixture()
	for i := range nodes {
		if err := c.Create(ctx, &nodes[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range mpools {
		if err := c.Create(ctx, &mpools[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, nm := range items {
		status := nm.Status
		if err := c.Create(ctx, &nm); err != nil {
			t.Fatal(err)
		}
		nm.Status = status
		if err := c.Status().Update(ctx, &nm); err != nil {
			t.Fatal(err)
		}
	}

	gotItems, gotPools, gotNodes, err := Collect(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(gotItems) != len(items) || len(gotPools) != len(mpools) || len(gotNodes) != len(nodes) {
		t.Fatalf("collected %d NodeMaintenances, %d pools, %d nodes; want %d, %d, %d",
			len(gotItems), len(gotPools), len(gotNodes), len(items), len(mpools), len(nodes))
	}
	r, err := Build(gotItems, gotPools, gotNodes, now)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Build(items, mpools, nodes, now)
	if err != nil {
		t.Fatal(err)
	}
	if r.String() != want.String() || len(r.Pools) != 4 || r.Pools[1].OverBudget != want.Pools[1].OverBudget {
		t.Errorf("report from the cluster: %s; from the objects: %s", r, want)
	}

	// A reader whose scheme lacks kmaint's types cannot list them.
	plain, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := Collect(context.Background(), plain); err == nil {
		t.Error("Collect with a scheme without kmaint's types succeeded")
	}
}

// assetsDir finds kube-apiserver and etcd as test/testbed does:
// KUBEBUILDER_ASSETS, else the newest build cached under bin/k8s.
func assetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	matches, _ := filepath.Glob(filepath.Join(repoRoot(), "bin", "k8s", "*", "kube-apiserver"))
	if len(matches) == 0 {
		return "", errors.New("no kube-apiserver: set KUBEBUILDER_ASSETS or run hack/envtest-assets.sh (make test does)")
	}
	return filepath.Dir(matches[len(matches)-1]), nil
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
