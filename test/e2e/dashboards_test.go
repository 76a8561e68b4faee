package e2e_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/dashboards"
	"github.com/kmaint/kmaint/operator/notify"
	"github.com/kmaint/kmaint/test/chatrecv"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/promtest"
	"github.com/kmaint/kmaint/test/sim"
)

// noDataAllowed lists the panels, by dashboard uid and panel title, that may
// return nothing after the scenario below, each with why. It is empty: every
// panel of every dashboard has data. A panel goes here only with a reason no
// honest scenario can give it data (a query bug reported to dashboards/'s
// owner), never to make the test pass.
var noDataAllowed = map[[2]string]string{}

// TestDashboardPanelsReturnData runs a small rollout through the operator,
// scraped by a real Prometheus, that makes every metric the dashboards use
// happen for real: host and metric requests, drains and reboots completing,
// a hook before each reboot that fails once and passes when run again,
// a drain abandoned on a PodDisruptionBudget, a reboot that never happens
// (the daemon reports degraded), a paused pool holding a request, and a
// policy's evaluations failing while Prometheus is down, nodes settling
// under a health check, and notifications of it all sent to a chat
// receiver. Then every panel
// query of every dashboard, with the variables set to that scenario's pools,
// policy and node, returns data: at least one series whose value is a
// number (a histogram quantile over no increase is NaN, which Grafana draws
// as nothing).
func TestDashboardPanelsReturnData(t *testing.T) {
	promtest.Binary(t) // skip (or fail on CI) without Prometheus
	g := NewWithT(t)
	ctx := context.Background()
	const (
		pool, held = "dash", "held"
		policyName = "dash-frag"
		blocker    = "dash-blocker" // the pod (and its budget) no drain may evict
	)
	var (
		rebooted   = "dash-000" // host request, reboot, then a request that waits: the node dashboard's node
		fragmented = "dash-001" // the policy's request and reboot
		undrained  = "dash-002" // drain abandoned: DrainTimeout
		stuck      = "dash-003" // reboot never happens: degraded
		waiting    = "held-000" // request held by the paused pool
	)
	chat := chatrecv.Start(t)
	urls := filepath.Join(t.TempDir(), "urls")
	g.Expect(os.WriteFile(urls, []byte(chat.URL()+"\n"), 0o600)).To(Succeed())
	c, err := sim.Start(ctx, bed, sim.Config{
		Pools: []sim.PoolSpec{
			// Rebooted nodes settle for a second under a health check
			// that finds them healthy.
			{Name: pool, Nodes: 4, MaxUnavailable: intstr.FromInt32(1), DrainTimeout: 3 * time.Second, OnDrainTimeout: v1alpha1.DrainAbandonAction,
				SettleTime: time.Second, HealthChecks: &v1alpha1.HealthChecks{
					Queries:  []v1alpha1.HealthCheck{{Name: "node-healthy", Query: sim.UnhealthySeries + " == 1"}},
					Interval: &metav1.Duration{Duration: v1alpha1.MinHealthCheckInterval},
				},
				Hooks: &v1alpha1.Hooks{BeforeReboot: []v1alpha1.Hook{{Name: "flaky-upgrade", OnFailure: v1alpha1.HookRetry,
					Job: &v1alpha1.HookJob{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
						Containers: []corev1.Container{{Name: "upgrade", Image: "kmaint-e2e/hook", Command: []string{sim.FlakyProgram}}},
					}}}}}},
			},
			{Name: held, Nodes: 1, MaxUnavailable: intstr.FromInt32(1)},
		},
		Journal: sim.Memory,
		Timing:  sim.Timing{Reboot: time.Second, DaemonRebootTimeout: 3 * time.Second},
		Metrics: &sim.MetricsConfig{Interval: time.Second},
		Notify:  notify.Options{URLsFile: urls, Interval: time.Second, SendTimeout: time.Second, Title: "dashboards"},
		// Where the pool's hook Jobs run (the simulated cluster runs them).
		HooksNamespace: "kmaint-hooks",
	})
	g.Expect(err).NotTo(HaveOccurred())
	// Cleanups run last first: the scenario's pods go while the cluster
	// runs, the cluster stops, then what it leaves in the shared API server
	// goes.
	t.Cleanup(func() { cleanUpDashboardScenario(t, policyName, c.Nodes(), pool, held) })
	t.Cleanup(c.Stop)
	t.Cleanup(func() { deleteScenarioPods(t, blocker) })

	// Each drain evicts a pod, so that it lasts at least one poll of the
	// drain and its NodeMaintenance is seen Draining: the drain histogram
	// observes only drains seen so (one with nothing to evict goes straight
	// to Rebooting). A pod whose budget allows no disruption holds the drain
	// of undrained.
	for _, node := range []string{rebooted, fragmented, stuck} {
		g.Expect(createScenarioPod(ctx, "app-"+node, node, "app")).To(Succeed())
	}
	newBlockingPod(ctx, g, blocker, undrained)
	harness.PatchPool(g, bed, held, func(p *v1alpha1.MaintenancePool) { p.Spec.Paused = true })
	g.Expect(c.StartOperator()).To(Succeed())

	p := fragmentationPolicy(policyName, pool, time.Second, intstr.FromString("100%"))
	g.Expect(bed.Client.Create(ctx, p)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(meta.IsStatusConditionTrue(harness.GetPolicy(g, bed, policyName).Status.Conditions, v1alpha1.ReadyCondition)).To(BeTrue())
	}, timeout).Should(Succeed())

	// Prometheus goes away for a moment: the policy's evaluations fail as
	// unreachable until it is back. This comes before any drain or reboot,
	// so that each histogram's first observation is scraped before its
	// second and their rates are not zero.
	prom := c.Prometheus()
	prom.Stop()
	g.Eventually(func(g Gomega) {
		g.Expect(meta.IsStatusConditionTrue(harness.GetPolicy(g, bed, policyName).Status.Conditions, v1alpha1.PrometheusUnreachableCondition)).To(BeTrue())
	}, timeout).Should(Succeed())
	g.Expect(prom.Resume()).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(meta.IsStatusConditionTrue(harness.GetPolicy(g, bed, policyName).Status.Conditions, v1alpha1.ReadyCondition)).To(BeTrue())
	}, timeout).Should(Succeed())

	// The rollout: two host requests, then a fragmented node the policy asks
	// for, admitted one at a time.
	g.Expect(c.Node(waiting).RequestReboot("kernel update")).To(Succeed())
	g.Expect(c.Node(rebooted).RequestReboot("kernel update")).To(Succeed())
	g.Expect(c.Node(undrained).RequestReboot("kernel update")).To(Succeed())
	index, err := c.SetFragmentation(fragmented, 0.95)
	g.Expect(err).NotTo(HaveOccurred())
	waitForIndex(t, c, fragmented, index)

	phaseOf := func(g Gomega, node string) []v1alpha1.Phase {
		var phases []v1alpha1.Phase
		for _, nm := range harness.MaintenancesOf(g, bed, node) {
			phases = append(phases, nm.Status.Phase)
		}
		return phases
	}
	g.Eventually(func(g Gomega) {
		g.Expect(phaseOf(g, rebooted)).To(ConsistOf(v1alpha1.PhaseSucceeded), rebooted)
		g.Expect(phaseOf(g, undrained)).To(ConsistOf(v1alpha1.PhaseFailed), undrained)
		reqs := policyRequests(g, policyName)
		g.Expect(reqs).To(HaveKey(fragmented))
		g.Expect(reqs[fragmented].Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), fragmented)
		g.Expect(phaseOf(g, waiting)).To(ConsistOf(v1alpha1.PhaseRequested), waiting)
	}, timeout).Should(Succeed())
	for _, nm := range harness.MaintenancesOf(g, bed, undrained) {
		failed := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.SucceededCondition)
		g.Expect(failed).NotTo(BeNil(), nm.Name)
		g.Expect(failed.Reason).To(Equal("DrainTimeout"), nm.Name)
	}

	// A node whose reboot hangs: its daemon reports degraded and the node
	// keeps the pool's budget, so a second request of rebooted waits.
	c.Node(stuck).IgnoreReboots(true)
	g.Expect(c.Node(stuck).RequestReboot("kernel update")).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(harness.GetPool(g, bed, pool).Status.Degraded).To(BeEquivalentTo(1))
	}, timeout).Should(Succeed())
	g.Expect(c.Node(rebooted).RequestReboot("kernel update")).To(Succeed())

	// Every panel, as Grafana would ask for it with these variables.
	queries, err := dashboards.Queries(dashboards.Sample{
		Pool:         pool + "|" + held,
		Policy:       policyName,
		Node:         rebooted,
		RateInterval: "5m",
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(queries).NotTo(BeEmpty())
	start := time.Now()
	g.Eventually(func(g Gomega) {
		var empty []string
		for _, q := range queries {
			if _, ok := noDataAllowed[[2]string{q.Dashboard, q.Panel}]; ok {
				continue
			}
			v, err := prom.Querier().Query(ctx, q.Expr, time.Now())
			switch {
			case err != nil:
				empty = append(empty, fmt.Sprintf("%s %q %s: %s: %v", q.Dashboard, q.Panel, q.RefID, q.Expr, err))
			case !hasNumber(v):
				empty = append(empty, fmt.Sprintf("%s %q %s: %s: %v", q.Dashboard, q.Panel, q.RefID, q.Expr, v))
			}
		}
		g.Expect(empty).To(BeEmpty(), "panels without data:\n%s", strings.Join(empty, "\n"))
	}, 2*time.Minute, time.Second).Should(Succeed())
	t.Logf("%d panel queries returned data, %s after the scenario", len(queries), time.Since(start).Round(time.Second))
}

// hasNumber reports whether a query result has a series whose value is not
// NaN.
func hasNumber(v model.Vector) bool {
	return slices.ContainsFunc(v, func(s *model.Sample) bool { return !math.IsNaN(float64(s.Value)) })
}

// scenarioLabel marks the pods of the dashboards scenario.
const scenarioLabel = "kmaint-e2e"

// createScenarioPod creates a running, evictable pod of app on node.
func createScenarioPod(ctx context.Context, name, node, app string) error {
	pod := gen.Pod(corev1.NamespaceDefault, name, node, map[string]string{"app": app, scenarioLabel: "dashboards"})
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	return gen.CreatePod(ctx, bed.Client, pod)
}

// deleteScenarioPods deletes the scenario's pods and the budget that holds
// a drain.
func deleteScenarioPods(t *testing.T, budget string) {
	ctx := context.Background()
	if err := bed.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(corev1.NamespaceDefault),
		client.MatchingLabels{scenarioLabel: "dashboards"}, client.GracePeriodSeconds(0)); err != nil {
		t.Error(err)
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceDefault, Name: budget}}
	if err := bed.Client.Delete(ctx, pdb); client.IgnoreNotFound(err) != nil {
		t.Error(err)
	}
}

// cleanUpDashboardScenario deletes what the scenario leaves in the API
// server the package shares: the policy, every request of its nodes, the
// nodes (a node with a request on it would be asked for again by the next
// test's operator) and the pools.
func cleanUpDashboardScenario(t *testing.T, policyName string, nodes []sim.Node, pools ...string) {
	cleanUpPolicy(t, policyName)
	cleanUpNodes(t, nodes, pools...)
}

// cleanUpNodes deletes the nodes, their requests and the pools.
func cleanUpNodes(t *testing.T, nodes []sim.Node, pools ...string) {
	ctx := context.Background()
	names := map[string]bool{}
	for _, n := range nodes {
		names[n.Name()] = true
	}
	var list v1alpha1.NodeMaintenanceList
	if err := bed.Client.List(ctx, &list); err != nil {
		t.Error(err)
	}
	for i := range list.Items {
		if nm := &list.Items[i]; names[nm.Spec.NodeName] {
			if err := bed.Client.Delete(ctx, nm); client.IgnoreNotFound(err) != nil {
				t.Error(err)
			}
		}
	}
	for name := range names {
		if err := bed.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	}
	for _, name := range pools {
		if err := bed.Client.Delete(ctx, &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: name}}); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	}
}
