package gate_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// poolWithObjectCheck is a pool with one blocking object check.
func poolWithObjectCheck(name string, objects v1alpha1.CheckObjects, expr string) *v1alpha1.MaintenancePool {
	pool := gen.Pool(name, intstr.FromInt32(2))
	pool.Spec.BlockingQueries = []v1alpha1.BlockingQuery{{Name: "node-quiet", Objects: &objects, Expression: expr}}
	return pool
}

// A blocking check of the node holds the admission of a node it is false
// for, with no Prometheus at all, and lets it through once it is true: the
// node is admitted, drained and rebooted as any other.
func TestObjectCheckHoldsAdmissionsUntilItHolds(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name = "oc-hold"
	createPool(t, poolWithObjectCheck(name, v1alpha1.CheckObjects{Node: &v1alpha1.NodeObjects{}}, `!('kmaint.test/busy' in node.metadata.labels)`))
	nodes := createNodes(t, name, name, 1, gen.Labels("kmaint.test/busy", "yes"))
	runDaemons(t, name, false)
	startGate(t, gateOptions{interval: 200 * time.Millisecond})

	request(t, nodes[0], name+"-0", time.Now())
	expectBlocked(g, name, v1alpha1.BlockingQueryReason, `"node-quiet"`, "is false for node "+nodes[0])
	g.Expect(getNode(g, nodes[0]).Annotations).NotTo(HaveKey(protocol.Admitted))
	g.Expect(getPool(g, name).Status.BlockingQuery).To(HaveField("Name", "node-quiet"))

	n := getNode(g, nodes[0])
	delete(n.Labels, "kmaint.test/busy")
	g.Expect(bed.Client.Update(ctx, n)).To(Succeed())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[0], false) }, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) *v1alpha1.BlockingQueryStatus { return getPool(g, name).Status.BlockingQuery }, timeout).Should(BeNil())
}

// A blocking check of the pods on the node lists them from the API server
// when the node's turn comes: a batch pod running there holds its
// admission, and once it is no batch pod the node is admitted, drained and
// rebooted.
func TestObjectCheckOfPodsOnTheNodeHoldsWhileABatchPodRuns(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name = "oc-pods"
	createPool(t, poolWithObjectCheck(name, v1alpha1.CheckObjects{PodsOnNode: &v1alpha1.PodsOnNodeObjects{}},
		`!pods.exists(p, p.metadata.?labels.?role.orValue('') == 'batch' && p.status.phase == 'Running')`))
	nodes := createNodes(t, name, name, 1)
	pod := gen.Pod("default", name+"-job", nodes[0], map[string]string{"role": "batch"})
	g.Expect(gen.CreatePod(ctx, bed.Client, pod)).To(Succeed())
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
	runDaemons(t, name, false)
	startGate(t, gateOptions{interval: 200 * time.Millisecond})

	request(t, nodes[0], name+"-0", time.Now())
	expectBlocked(g, name, v1alpha1.BlockingQueryReason, `"node-quiet"`, "is false for node "+nodes[0]+" and its 1 pods")
	g.Expect(getNode(g, nodes[0]).Annotations).NotTo(HaveKey(protocol.Admitted))

	g.Expect(bed.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
	pod.Labels["role"] = "web"
	g.Expect(bed.Client.Update(ctx, pod)).To(Succeed())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[0], false) }, timeout).Should(Succeed())
}

// An object check that cannot say true or false holds admissions, with the
// reason on the pool's Blocked condition, and one that cannot be compiled
// says so on Degraded too, before any request waits: never a pass.
func TestObjectChecksThatCannotBeEvaluatedHold(t *testing.T) {
	nodeKind := v1alpha1.CheckObjects{Node: &v1alpha1.NodeObjects{}}
	cases := map[string]struct {
		pool    string
		objects v1alpha1.CheckObjects
		expr    string
		// forbidden reads the objects as a user with no rights.
		forbidden bool
		// wantReason is the Blocked reason, wantMessage substrings of its
		// message; wantDegraded is true when Degraded says it too.
		wantReason   string
		wantMessage  []string
		wantDegraded bool
	}{
		"an expression that does not compile": {
			pool: "ocf-compile", objects: nodeKind, expr: `node.metadata.name ==`,
			wantReason: v1alpha1.InvalidObjectCheckReason, wantMessage: []string{`"node-quiet"`, "does not compile"}, wantDegraded: true,
		},
		"an expression that is not a bool": {
			pool: "ocf-type", objects: nodeKind, expr: `node.metadata.name`,
			wantReason: v1alpha1.InvalidObjectCheckReason, wantMessage: []string{"not a bool"},
		},
		"an estimated cost past the limit": {
			pool: "ocf-cost", objects: v1alpha1.CheckObjects{Pods: &v1alpha1.PodObjects{Namespace: "default"}},
			expr:       `pods.all(a, pods.all(b, pods.all(c, a.metadata.name != c.metadata.name)))`,
			wantReason: v1alpha1.ObjectCheckCostExceededReason, wantMessage: []string{"more than the limit"}, wantDegraded: true,
		},
		"an expression that fails as it runs": {
			pool: "ocf-runtime", objects: nodeKind, expr: `node.metadata.labels['kmaint.test/absent'] == 'x'`,
			wantReason: v1alpha1.ObjectCheckFailedReason, wantMessage: []string{"for node ocf-runtime-0", "no such key"},
		},
		"pods the operator may not read": {
			pool: "ocf-forbidden", objects: v1alpha1.CheckObjects{Pods: &v1alpha1.PodObjects{Namespace: "default"}}, expr: `pods.size() == 0`,
			forbidden: true, wantReason: v1alpha1.ObjectCheckForbiddenReason, wantMessage: []string{"may not list the pods in namespace default"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			createPool(t, poolWithObjectCheck(tc.pool, tc.objects, tc.expr))
			node := createNodes(t, tc.pool, tc.pool, 1)[0]
			opts := gateOptions{interval: 200 * time.Millisecond}
			if tc.forbidden {
				opts.pods = readerWithoutRights(t)
			}
			startGate(t, opts)
			if tc.wantDegraded {
				g.Eventually(func(g Gomega) {
					c := meta.FindStatusCondition(getPool(g, tc.pool).Status.Conditions, v1alpha1.DegradedCondition)
					g.Expect(c).NotTo(BeNil())
					g.Expect(c.Reason).To(Equal(tc.wantReason), "message %q", c.Message)
					g.Expect(c.Message).To(ContainSubstring(`blocking check "node-quiet"`))
				}, timeout).Should(Succeed(), "Degraded says so before any request waits")
			}
			request(t, node, tc.pool+"-r", time.Now())
			expectBlocked(g, tc.pool, tc.wantReason, tc.wantMessage...)
			g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "MaintenancePool", tc.pool, "Warning") }, timeout).Should(ContainElement(tc.wantReason))
			g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.Admitted))
			g.Expect(getPool(g, tc.pool).Status.PendingRequests).To(BeEquivalentTo(1))
		})
	}
}

// readerWithoutRights is a client of the test's API server that acts as a
// user RBAC grants nothing: what a chart that took the operator's rights
// to read pods away would leave it.
func readerWithoutRights(t *testing.T) client.Reader {
	t.Helper()
	cfg := rest.CopyConfig(bed.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "kmaint-test-no-rights"}
	c, err := client.New(cfg, client.Options{Scheme: bed.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
