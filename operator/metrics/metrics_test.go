package metrics_test

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/operator/metrics"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/sim"
	"github.com/kmaint/kmaint/test/testbed"
)

var bed *testbed.Bed

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &bed)) }

const timeout = 30 * time.Second

// A reboot through the gate shows in the event metrics with its pool and
// source; the pool's and the policy's state show in the gauges.
func TestOperatorMetrics(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pool := gen.Pool("metrics", intstr.FromInt32(1))
	g.Expect(bed.Client.Create(ctx, pool)).To(Succeed())
	nodes := harness.CreateNodes(t, bed, "metrics", "metrics", 2)
	harness.RunDaemons(t, bed, "metrics", false)
	addr := harness.FreeAddr(t)
	op, err := sim.StartOperator(ctx, bed.Config, operator.Options{MetricsAddr: addr})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = op.Stop() })
	rp := &v1alpha1.RebootPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-monthly"},
		Spec: v1alpha1.RebootPolicySpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "metrics"}},
			Schedule:     &v1alpha1.ScheduleTrigger{Cron: "0 3 1 * *"},
		},
	}
	g.Expect(bed.Client.Create(ctx, rp)).To(Succeed())

	g.Expect(gen.Request(ctx, bed.Client, nodes[0], "m-1", v1alpha1.SourceHost, time.Now())).To(Succeed())
	g.Eventually(func(g Gomega) {
		harness.ExpectSettled(g, bed, nodes[0], false)
		g.Expect(harness.GetNode(g, bed, nodes[0]).Status.NodeInfo.BootID).NotTo(Equal("boot-0"))
	}, timeout).Should(Succeed())

	g.Eventually(func(g Gomega) {
		body := harness.Scrape(g, addr)
		for _, want := range []string{
			`kmaint_requests_total{policy="",pool="metrics",source="host"} 1`,
			`kmaint_admissions_total{pool="metrics"} 1`,
			`kmaint_drain_duration_seconds_count{pool="metrics"} 1`,
			`kmaint_reboot_duration_seconds_count{pool="metrics"} 1`,
			`kmaint_maintenances_completed_total{pool="metrics",result="succeeded",source="host"} 1`,
			// Created at 0 before they happen, so the first one shows in
			// increase() and rate().
			`kmaint_drain_failures_total{pool="metrics",reason="DrainTimeout"} 0`,
			`kmaint_maintenances_completed_total{pool="metrics",result="failed",source="api"} 0`,
			`kmaint_pool_nodes{pool="metrics"} 2`,
			`kmaint_pool_max_unavailable{pool="metrics"} 1`,
			`kmaint_pool_unavailable_nodes{pool="metrics"} 0`,
			`kmaint_pool_window_open{pool="metrics"} 1`,
			`kmaint_pool_blocked{pool="metrics",reason=""} 0`,
			`kmaint_pool_over_budget{pool="metrics"} 0`,
			`kmaint_pool_over_budget_episodes_total{pool="metrics"} 0`,
			`kmaint_policy_requests_raised_total{policy="metrics-monthly"} 0`,
			`kmaint_policy_condition{condition="Ready",policy="metrics-monthly"} 1`,
			`kmaint_policy_candidates{policy="metrics-monthly",state="Pending"} 0`,
			// Counted without listing the history: the finished are what
			// the cache holds but the open and the unreadable.
			`kmaint_maintenances{state="finished"} 1`,
			`kmaint_maintenances{state="open"} 0`,
			`kmaint_maintenances{state="unreadable"} 0`,
		} {
			g.Expect(body).To(ContainSubstring(want))
		}
		// Dashboards and alerts are checked against metrics.All: it must
		// name everything the operator exports.
		g.Expect(metrics.All()).To(ContainElements(exportedNames(body)))
		g.Expect(len(exportedNames(body))).To(BeNumerically(">=", 20))
	}, timeout).Should(Succeed())

	// Paused, the pool reports why it admits nothing.
	harness.PatchPool(g, bed, "metrics", func(p *v1alpha1.MaintenancePool) { p.Spec.Paused = true })
	g.Expect(gen.Request(ctx, bed.Client, nodes[1], "m-2", v1alpha1.SourceHost, time.Now())).To(Succeed())
	g.Eventually(func(g Gomega) {
		body := harness.Scrape(g, addr)
		g.Expect(body).To(ContainSubstring(`kmaint_pool_blocked{pool="metrics",reason="Paused"} 1`))
		g.Expect(body).To(ContainSubstring(`kmaint_pool_paused{pool="metrics"} 1`))
		g.Expect(body).To(ContainSubstring(`kmaint_pool_pending_requests{pool="metrics"} 1`))
		g.Expect(body).To(ContainSubstring(`kmaint_maintenances{state="open"} 1`))
		g.Expect(body).To(ContainSubstring(`kmaint_maintenances{state="finished"} 1`))
	}, timeout).Should(Succeed())
	t.Cleanup(func() {
		_ = bed.Client.Delete(ctx, rp)
		_ = bed.Client.Delete(ctx, pool)
	})
}

// exportedNames lists the kmaint_ metric families in a scrape, histograms
// by their base name.
func exportedNames(body string) []string {
	seen := map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		name, ok := strings.CutPrefix(line, "# TYPE ")
		if !ok || !strings.HasPrefix(name, "kmaint_") {
			continue
		}
		seen[strings.Fields(name)[0]] = true
	}
	return slices.Sorted(maps.Keys(seen))
}
