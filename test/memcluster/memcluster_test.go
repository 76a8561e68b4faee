package memcluster_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/scheme"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/cacheread"
	"github.com/kmaint/kmaint/operator/index"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/memcluster"
)

func TestClusterServesReadsAndPatches(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s, err := scheme.New()
	g.Expect(err).NotTo(HaveOccurred())
	c := memcluster.New(s)
	open := &v1alpha1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: "open"}, Spec: v1alpha1.NodeMaintenanceSpec{NodeName: "n1"}}
	done := &v1alpha1.NodeMaintenance{ObjectMeta: metav1.ObjectMeta{Name: "done"}, Spec: v1alpha1.NodeMaintenanceSpec{NodeName: "n1"},
		Status: v1alpha1.NodeMaintenanceStatus{Phase: v1alpha1.PhaseSucceeded}}
	g.Expect(c.Add(gen.Node("n1"), gen.Node("n2"), open, done)).To(Succeed())
	cl := c.Client()

	// The operator's indexes answer Lists.
	var list v1alpha1.NodeMaintenanceList
	g.Expect(cl.List(ctx, &list, client.MatchingFields{index.OpenOnNode: "n1"})).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	g.Expect(list.Items[0].Name).To(Equal("open"))

	// A patch is applied and returned; one made on a stale copy with a
	// lock is refused.
	var node corev1.Node
	g.Expect(cl.Get(ctx, client.ObjectKey{Name: "n1"}, &node)).To(Succeed())
	stale := node.DeepCopy()
	base := node.DeepCopy()
	node.Spec.Unschedulable = true
	g.Expect(cl.Patch(ctx, &node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))).To(Succeed())
	g.Expect(node.ResourceVersion).NotTo(Equal(base.ResourceVersion))
	g.Expect(c.Served()).To(BeNumerically(">", 0), "the time spent applying it is counted as the cluster's")
	again := stale.DeepCopy()
	again.Labels = map[string]string{"a": "b"}
	err = cl.Patch(ctx, again, client.MergeFromWithOptions(stale, client.MergeFromWithOptimisticLock{}))
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "got %v", err)

	// The informers' store holds what was written, as a new object.
	nodes, err := cacheread.All(ctx, c.Informers(), &corev1.Node{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(nodes).To(HaveLen(2))
	for _, n := range nodes {
		g.Expect(n.Spec.Unschedulable).To(Equal(n.Name == "n1"), n.Name)
	}
	g.Expect(stale.Spec.Unschedulable).To(BeFalse(), "what a reader held is unchanged")

	err = cl.Get(ctx, client.ObjectKey{Name: "n3"}, &node)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "got %v", err)
}
