package report

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

// rollout is a rolling reboot of n nodes in one pool of maxUnavailable
// budget: every node asks at 0, and the gate admits them budget at a time,
// each taking 60 s from admission to back.
func rollout(n, budget int) ([]v1alpha1.NodeMaintenance, []v1alpha1.MaintenancePool, []corev1.Node) {
	var items []v1alpha1.NodeMaintenance
	var nodes []corev1.Node
	for i := range n {
		name := fmt.Sprintf("node-%04d", i)
		nodes = append(nodes, *gen.Node(name, gen.Labels("pool", "fleet")))
		admitted := (i / budget) * 60
		items = append(items, nm(name+"-cfg", name, v1alpha1.SourceConfig, v1alpha1.PhaseSucceeded, map[v1alpha1.Phase]int{
			v1alpha1.PhaseRequested: 0, v1alpha1.PhaseApproved: admitted, v1alpha1.PhaseDraining: admitted,
			v1alpha1.PhaseRebooting: admitted + 20, v1alpha1.PhaseSucceeded: admitted + 60,
		}))
	}
	return items, []v1alpha1.MaintenancePool{*gen.Pool("fleet", intstr.FromInt32(int32(budget)))}, nodes
}

// TestLargeRollout: two thousand nodes make a page of thin rows that a
// browser opens at once, and the budget chart peaks at the budget.
func TestLargeRollout(t *testing.T) {
	items, mpools, nodes := rollout(2000, 50)
	start := time.Now()
	r, err := Build(items, mpools, nodes, at(3000))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d KiB of HTML in %v", r, buf.Len()/1024, time.Since(start).Round(time.Millisecond))
	p := r.Pools[0]
	if p.Peak != 50 || p.OverBudget != 0 || len(p.Steps) != 2 {
		t.Errorf("peak %d, over budget %v, %d steps; want 50 at once from the first admission to the last return, never over", p.Peak, p.OverBudget, len(p.Steps))
	}
	if !r.page().Timeline.Compact {
		t.Error("2000 rows should be drawn compact")
	}
	if buf.Len() > 4<<20 {
		t.Errorf("the page is %d MiB", buf.Len()>>20)
	}
}
