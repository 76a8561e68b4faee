package gate_test

import (
	"os"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/testbed"
)

// bed is the real API server all tests in this package share. Each test
// works in its own pool, with its own nodes.
var bed *testbed.Bed

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &bed)) }

func startOperator(t *testing.T) func() { return harness.StartOperator(t, bed) }

func createNodes(t *testing.T, prefix, pool string, n int, opts ...gen.NodeOption) []string {
	return harness.CreateNodes(t, bed, prefix, pool, n, opts...)
}

func getNode(g Gomega, name string) *corev1.Node { return harness.GetNode(g, bed, name) }

func watchBudget(t *testing.T, pool string) *harness.BudgetWatcher {
	return harness.WatchBudget(t, bed, pool)
}

func runDaemons(t *testing.T, pool string, fast bool) *harness.Daemons {
	return harness.RunDaemons(t, bed, pool, fast)
}

func expectClean(g Gomega, name string, cordonedByPerson bool) {
	harness.ExpectClean(g, bed, name, cordonedByPerson)
}
