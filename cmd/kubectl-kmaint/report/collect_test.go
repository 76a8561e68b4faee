package report

import (
	"context"
	"testing"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/test/testbed"
)

// TestCollect lists a real API server's objects and builds their report.
func TestCollect(t *testing.T) {
	bed, err := testbed.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := bed.Stop(); err != nil {
			t.Error(err)
		}
	})
	c, cfg := bed.Client, bed.Config
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
