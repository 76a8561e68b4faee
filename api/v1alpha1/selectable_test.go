package v1alpha1_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// The API server selects NodeMaintenances by node and by phase, so that a
// person lists a node's history or every failed reboot without reading the
// whole history (`kubectl get kmnm --field-selector status.phase=Failed`),
// and a client can watch only the records still open.
func TestNodeMaintenancesAreSelectedByNodeAndPhase(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	create := func(name, node string, phase v1alpha1.Phase) {
		t.Helper()
		nm := &v1alpha1.NodeMaintenance{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: node, Reason: "kernel update"},
		}
		g.Expect(bed.Client.Create(ctx, nm)).To(Succeed())
		t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), nm) })
		if phase != "" {
			nm.Status.Phase = phase
			g.Expect(bed.Client.Status().Update(ctx, nm)).To(Succeed())
		}
	}
	create("select-a-done", "select-a", v1alpha1.PhaseSucceeded)
	create("select-a-failed", "select-a", v1alpha1.PhaseFailed)
	create("select-a-open", "select-a", v1alpha1.PhaseDraining)
	create("select-b-new", "select-b", "")
	create("select-b-failed", "select-b", v1alpha1.PhaseFailed)

	names := func(selector string) []string {
		sel, err := fields.ParseSelector(selector)
		g.Expect(err).NotTo(HaveOccurred())
		var list v1alpha1.NodeMaintenanceList
		g.Expect(bed.Client.List(ctx, &list, client.MatchingFieldsSelector{Selector: sel})).To(Succeed(), selector)
		var out []string
		for _, nm := range list.Items {
			if nm.Spec.NodeName == "select-a" || nm.Spec.NodeName == "select-b" {
				out = append(out, nm.Name)
			}
		}
		return out
	}
	g.Expect(names("status.phase=Failed")).To(ConsistOf("select-a-failed", "select-b-failed"))
	g.Expect(names("status.phase!=Succeeded,status.phase!=Failed")).To(ConsistOf("select-a-open", "select-b-new"),
		"the records not finished, one with no phase yet")
	g.Expect(names("spec.nodeName=select-a,status.phase=Succeeded")).To(ConsistOf("select-a-done"))
	g.Expect(names("spec.nodeName=select-b")).To(ConsistOf("select-b-new", "select-b-failed"))
}
