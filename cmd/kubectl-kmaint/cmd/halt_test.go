package cmd_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/promtest"
	"github.com/kmaint/kmaint/test/sim"
)

// A rollout the real operator halts at its first node, which comes back
// unhealthy on a real Prometheus: status names the node, the check and
// the value and says how to resume; once the series recovers, resume lets
// the rollout finish, every node rebooted once.
func TestStatusAndResumeOfARealHalt(t *testing.T) {
	promtest.Binary(t) // skip (or fail on CI) without Prometheus
	g := NewWithT(t)
	ctx := context.Background()
	const pool, check = "rh", "node-healthy"
	c, err := sim.Start(ctx, bed, sim.Config{
		Pools:   []sim.PoolSpec{sim.PoolSpec{Name: pool, Nodes: 3, MaxUnavailable: intstr.FromInt32(1)}.Guarded(check, time.Second)},
		Journal: sim.Memory,
		Timing:  sim.Timing{Reboot: 500 * time.Millisecond},
		Metrics: &sim.MetricsConfig{Interval: time.Second},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		var names []string
		for _, n := range c.Nodes() {
			names = append(names, n.Name())
		}
		deleteNodes(t, names...)
		_ = bed.Client.Delete(context.Background(), &v1alpha1.MaintenancePool{ObjectMeta: metav1.ObjectMeta{Name: pool}})
	})
	t.Cleanup(c.Stop)
	g.Expect(c.SetUnhealthyOnReboot(1)).To(Succeed())
	g.Expect(c.StartOperator()).To(Succeed())

	_, err = run(t, "rollout", pool, "--config", "kernel-2")
	g.Expect(err).NotTo(HaveOccurred())

	var bad string
	g.Eventually(func() []string { return c.Unhealthy() }, 2*timeout).Should(HaveLen(1))
	bad = c.Unhealthy()[0]
	g.Eventually(func(g Gomega) {
		out, err := run(t, "status", "--pool", pool)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(MatchRegexp(`(?m)^rh\s+3\s+.*HALTED: ` + bad + ` failed ` + check))
		g.Expect(out).To(MatchRegexp(`(?m)^` + bad + `\s+rh\s+Settling\s+health check "` + check + `" failed \(value 1\) at `))
		g.Expect(out).To(ContainSubstring("Pool rh is HALTED since "))
		g.Expect(out).To(ContainSubstring(`  node ` + bad + `: health check "` + check + `" failed with value 1 at `))
		g.Expect(out).To(ContainSubstring("  resume:    kubectl kmaint resume rh "))
	}, 2*timeout).Should(Succeed())
	out, _ := run(t, "status", "--pool", pool)
	t.Log("\n" + out)

	// The series recovers; the pool resumes Manual, so a person resumes it.
	g.Expect(c.SetHealthy(bad)).To(Succeed())
	out, err = run(t, "resume", pool)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(MatchRegexp(`^maintenancepool/rh halt resumed up to \S+Z \(kmaint.io/resume-halt=\S+Z\); slots freed, nodes as they are: node ` + bad + ` \(health check "` + check + `", value 1, at \S+Z\)\n$`))

	g.Eventually(func(g Gomega) {
		for _, n := range c.Nodes() {
			node := harness.GetNode(g, bed, n.Name())
			g.Expect(node.Annotations).To(HaveKeyWithValue(protocol.CurrentConfig, "kernel-2"), n.Name())
			g.Expect(node.Annotations).NotTo(HaveKey(protocol.Settling), n.Name())
		}
		p := harness.GetPool(g, bed, pool)
		g.Expect(meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.HaltedCondition)).To(BeFalse())
	}, 3*timeout).Should(Succeed())
	for _, n := range c.Nodes() {
		g.Expect(n.Reboots()).To(Equal(1), n.Name())
	}
	g.Eventually(func(g Gomega) {
		out, err := run(t, "status", "--pool", pool)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(MatchRegexp(`(?m)^rh\s+3\s+\[#{20}\] 3/3 updated\s+0/1\s+0\s+OK$`))
	}, timeout).Should(Succeed())
	out, err = run(t, "resume", pool)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("maintenancepool/rh is neither paused nor halted: nothing to resume\n"))
}
