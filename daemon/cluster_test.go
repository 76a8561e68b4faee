package daemon_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/node"
)

// These tests run the real operator and real daemons together: the
// cluster-side path with the daemon playing the node.

func TestConfigRolloutRebootsEachNodeOnceAndUpdatesCurrentConfig(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(bed.Client.Create(ctx, gen.Pool("roll", intstr.FromInt32(1)))).To(Succeed())
	var nodes []*node.Node
	for i := range 3 {
		nodes = append(nodes, startNode(t, fmt.Sprintf("roll-%d", i), harness.NodeOptions{Labels: []string{"pool", "roll"}}))
	}
	budget := harness.WatchBudget(t, bed, "roll")
	harness.StartOperator(t, bed)

	harness.PatchPool(g, bed, "roll", func(p *v1alpha1.MaintenancePool) { p.Spec.DesiredConfig = "os-2.0" })

	for i, n := range nodes {
		name := fmt.Sprintf("roll-%d", i)
		g.Eventually(func(g Gomega) {
			node := getNode(g, name)
			g.Expect(node.Annotations).To(HaveKeyWithValue(protocol.CurrentConfig, "os-2.0"))
			harness.ExpectSettled(g, bed, name, false)
		}, timeout).Should(Succeed())
		g.Expect(n.Reboots()).To(Equal(1), "node %s", name)
	}
	g.Eventually(func(g Gomega) {
		g.Expect(harness.GetPool(g, bed, "roll").Status.Updated).To(BeEquivalentTo(3))
	}, timeout).Should(Succeed())
	most, _ := budget.MostUnavailable()
	g.Expect(most).To(Equal(1))
	// Settled: no further reboots.
	g.Consistently(func() int { return nodes[0].Reboots() + nodes[1].Reboots() + nodes[2].Reboots() }, 2*time.Second).Should(Equal(3))
}

func TestNodeMaintenanceRebootsOnceAndIsReported(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(bed.Client.Create(ctx, gen.Pool("nm", intstr.FromInt32(1)))).To(Succeed())
	n := startNode(t, "nm-0", harness.NodeOptions{Labels: []string{"pool", "nm"}})
	harness.StartOperator(t, bed)
	first := n.BootID()

	nm := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: "nm-0-kernel"},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: "nm-0", Reason: "CVE-2026-0001 kernel fix"},
	}
	g.Expect(bed.Client.Create(ctx, nm)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := harness.GetMaintenance(g, bed, nm.Name)
		g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		g.Expect(got.Status.JournaledBootID).To(Equal(first), "the daemon reports the boot it journaled in")
		g.Expect(got.Status.BootIDBefore).To(Equal(first))
		g.Expect(got.Status.BootIDAfter).To(Equal(n.BootID()))
	}, timeout).Should(Succeed())
	g.Expect(n.Reboots()).To(Equal(1))
	g.Eventually(func(g Gomega) { harness.ExpectSettled(g, bed, "nm-0", false) }, timeout).Should(Succeed())
	g.Consistently(n.Reboots, 2*time.Second).Should(Equal(1))
}

func TestHostRequestsOnAPoolGoThroughTheGateOneAtATime(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(bed.Client.Create(ctx, gen.Pool("gate", intstr.FromInt32(1)))).To(Succeed())
	var nodes []*node.Node
	for i := range 3 {
		nodes = append(nodes, startNode(t, fmt.Sprintf("gate-%d", i), harness.NodeOptions{Labels: []string{"pool", "gate"}, Fast: i == 2}))
	}
	budget := harness.WatchBudget(t, bed, "gate")
	harness.StartOperator(t, bed)
	for _, n := range nodes {
		requestReboot(t, n, "host maintenance")
	}
	for i, n := range nodes {
		name := fmt.Sprintf("gate-%d", i)
		g.Eventually(n.Reboots, timeout).Should(Equal(1), name)
		g.Eventually(func(g Gomega) { harness.ExpectSettled(g, bed, name, false) }, timeout).Should(Succeed())
	}
	most, _ := budget.MostUnavailable()
	g.Expect(most).To(Equal(1))
	// Every host request shows up as a Succeeded NodeMaintenance. The
	// maintenance controller writes that phase after it sees the node back,
	// so a settled node's request may still read Rebooting for a moment.
	g.Eventually(func(g Gomega) {
		var list v1alpha1.NodeMaintenanceList
		g.Expect(bed.Client.List(ctx, &list)).To(Succeed())
		var phases []string
		for _, nm := range list.Items {
			if nm.Spec.Source == v1alpha1.SourceHost && strings.HasPrefix(nm.Spec.NodeName, "gate-") {
				phases = append(phases, nm.Spec.NodeName+" "+string(nm.Status.Phase))
			}
		}
		g.Expect(phases).To(ConsistOf("gate-0 Succeeded", "gate-1 Succeeded", "gate-2 Succeeded"))
	}, timeout).Should(Succeed())
	g.Consistently(func() int { return nodes[0].Reboots() + nodes[1].Reboots() + nodes[2].Reboots() }, 2*time.Second).Should(Equal(3))
}
