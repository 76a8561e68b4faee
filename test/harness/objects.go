package harness

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/testbed"
)

// The readers below fail g when the object cannot be read, so that they can
// sit inside Eventually as well as outside it.

// get reads the cluster-scoped object of type T named name.
func get[T any, PT interface {
	*T
	client.Object
}](g Gomega, bed *testbed.Bed, name string) PT {
	obj := PT(new(T))
	g.Expect(bed.Client.Get(context.Background(), types.NamespacedName{Name: name}, obj)).To(Succeed(), "get %T %s", obj, name)
	return obj
}

// GetNode reads a node from the API server.
func GetNode(g Gomega, bed *testbed.Bed, name string) *corev1.Node {
	return get[corev1.Node](g, bed, name)
}

// GetPool reads a MaintenancePool.
func GetPool(g Gomega, bed *testbed.Bed, name string) *v1alpha1.MaintenancePool {
	return get[v1alpha1.MaintenancePool](g, bed, name)
}

// GetMaintenance reads a NodeMaintenance.
func GetMaintenance(g Gomega, bed *testbed.Bed, name string) *v1alpha1.NodeMaintenance {
	return get[v1alpha1.NodeMaintenance](g, bed, name)
}

// GetPolicy reads a RebootPolicy.
func GetPolicy(g Gomega, bed *testbed.Bed, name string) *v1alpha1.RebootPolicy {
	return get[v1alpha1.RebootPolicy](g, bed, name)
}

// PatchPool changes a pool as a person with kubectl edit would: it reads
// the pool, lets change edit it, and merge-patches the difference.
func PatchPool(g Gomega, bed *testbed.Bed, name string, change func(*v1alpha1.MaintenancePool)) {
	p := GetPool(g, bed, name)
	base := p.DeepCopy()
	change(p)
	g.Expect(bed.Client.Patch(context.Background(), p, client.MergeFrom(base))).To(Succeed(), "patch pool %s", name)
}

// MaintenancesOf lists the NodeMaintenances of a node.
func MaintenancesOf(g Gomega, bed *testbed.Bed, node string) []v1alpha1.NodeMaintenance {
	var list v1alpha1.NodeMaintenanceList
	g.Expect(bed.Client.List(context.Background(), &list)).To(Succeed())
	var out []v1alpha1.NodeMaintenance
	for _, nm := range list.Items {
		if nm.Spec.NodeName == node {
			out = append(out, nm)
		}
	}
	return out
}

// PolicyMaintenances lists the NodeMaintenances a RebootPolicy raised, by
// node. Each must name the policy in its spec as well as in its label.
func PolicyMaintenances(g Gomega, bed *testbed.Bed, policy string) map[string][]v1alpha1.NodeMaintenance {
	var list v1alpha1.NodeMaintenanceList
	g.Expect(bed.Client.List(context.Background(), &list, client.MatchingLabels{v1alpha1.PolicyLabel: policy})).To(Succeed())
	out := map[string][]v1alpha1.NodeMaintenance{}
	for _, nm := range list.Items {
		g.Expect(nm.Spec.Policy).To(Equal(policy), "policy of %s", nm.Name)
		out[nm.Spec.NodeName] = append(out[nm.Spec.NodeName], nm)
	}
	return out
}

// EventReasons returns the reasons of the events about the object of this
// kind and name, oldest first as the API server lists them. eventType
// ("Normal" or "Warning") keeps only events of that type; empty keeps all.
func EventReasons(g Gomega, bed *testbed.Bed, kind, name, eventType string) []string {
	var list eventsv1.EventList
	g.Expect(bed.Client.List(context.Background(), &list)).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name && (eventType == "" || e.Type == eventType) {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

// Create creates obj for the rest of the package's tests: it stays when
// the test ends. A pool that went would hand its nodes to the default pool.
func Create(t testing.TB, bed *testbed.Bed, obj client.Object) {
	t.Helper()
	if err := bed.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// CreateTemporary creates obj and deletes it when the test ends, for what
// the package's later tests must not see (a pool in a listing, a policy
// that goes on raising requests).
func CreateTemporary(t testing.TB, bed *testbed.Bed, obj client.Object) {
	t.Helper()
	Create(t, bed, obj)
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), obj) })
}

// CreateNamespace creates a namespace, for a test's pods.
func CreateNamespace(t testing.TB, bed *testbed.Bed, name string) {
	t.Helper()
	Create(t, bed, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}
