package realkmaint

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// labelNodes labels the nodes pool=pool, as a person puts nodes in a pool,
// and takes the label off again when t ends.
func labelNodes(t *testing.T, kc client.Client, pool string, nodes ...string) {
	t.Helper()
	g := NewWithT(t)
	for _, name := range nodes {
		setPoolLabel(g, kc, name, pool)
		t.Cleanup(func() { setPoolLabel(NewWithT(t), kc, name, "") })
	}
}

// setPoolLabel sets the node's pool label, or removes it when pool is empty.
func setPoolLabel(g Gomega, kc client.Client, name, pool string) {
	ctx := context.Background()
	var node corev1.Node
	g.Expect(kc.Get(ctx, client.ObjectKey{Name: name}, &node)).To(Succeed())
	patch := client.MergeFrom(node.DeepCopy())
	if pool == "" {
		delete(node.Labels, "pool")
	} else {
		node.Labels["pool"] = pool
	}
	g.Expect(kc.Patch(ctx, &node, patch)).To(Succeed(), "label node %s pool=%s", name, pool)
}

// createPool creates the pool and deletes it when t ends.
func createPool(t *testing.T, kc client.Client, pool *v1alpha1.MaintenancePool) {
	t.Helper()
	NewWithT(t).Expect(kc.Create(context.Background(), pool)).To(Succeed())
	t.Cleanup(func() { deleteObject(t, kc, pool) })
}

// createPolicy creates the policy and deletes it when t ends, so that it
// raises nothing during the tests after t.
func createPolicy(t *testing.T, kc client.Client, p *v1alpha1.RebootPolicy) {
	t.Helper()
	NewWithT(t).Expect(kc.Create(context.Background(), p)).To(Succeed())
	t.Cleanup(func() { deleteObject(t, kc, p) })
}

// deleteObject deletes obj and waits until it is gone.
func deleteObject(t *testing.T, kc client.Client, obj client.Object) {
	ctx := context.Background()
	if err := kc.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
		t.Errorf("delete %s: %v", obj.GetName(), err)
		return
	}
	NewWithT(t).Eventually(func() error {
		return kc.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	}, timeout, time.Second).Should(WithTransform(apierrors.IsNotFound, BeTrue()), "%s deleted", obj.GetName())
}
