package gate_test

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/testbed"
)

// bed is the real API server all tests in this package share. Each test
// works in its own pool, with its own nodes.
var bed *testbed.Bed

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &bed)) }

func startOperator(t *testing.T) func() { return harness.StartOperator(t, bed) }

// createNodes creates a test's nodes, and deletes them when it ends, as
// createPool does its pool: every operator a test starts reconciles every
// pool and reads every node there is, and the package's hundreds of tests
// would otherwise leave hundreds of each to the later ones (under -race on
// a loaded machine, half a minute of a test's first reconciles).
func createNodes(t *testing.T, prefix, pool string, n int, opts ...gen.NodeOption) []string {
	names := harness.CreateNodes(t, bed, prefix, pool, n, opts...)
	t.Cleanup(func() {
		for _, name := range names {
			_ = bed.Client.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	})
	return names
}

func getNode(g Gomega, name string) *corev1.Node { return harness.GetNode(g, bed, name) }

func createPool(t *testing.T, pool *v1alpha1.MaintenancePool) { harness.CreateTemporary(t, bed, pool) }

func getPool(g Gomega, name string) *v1alpha1.MaintenancePool { return harness.GetPool(g, bed, name) }

func getMaintenance(g Gomega, name string) *v1alpha1.NodeMaintenance {
	return harness.GetMaintenance(g, bed, name)
}

func watchBudget(t *testing.T, pool string) *harness.BudgetWatcher {
	return harness.WatchBudget(t, bed, pool)
}

func runDaemons(t *testing.T, pool string, fast bool) *harness.Daemons {
	return harness.RunDaemons(t, bed, pool, fast)
}

func expectSettled(g Gomega, name string, cordonedByPerson bool) {
	harness.ExpectSettled(g, bed, name, cordonedByPerson)
}

// expectRebootedOnce asserts the node is back from one reboot by runDaemons
// (in boot boot-0-r1) and has settled.
func expectRebootedOnce(g Gomega, name string, cordonedByPerson bool) {
	g.Expect(getNode(g, name).Status.NodeInfo.BootID).To(Equal("boot-0-r1"), "boot of node %s", name)
	expectSettled(g, name, cordonedByPerson)
}
