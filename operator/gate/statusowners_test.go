package gate_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/poolstatus"
	"github.com/kmaint/kmaint/operator/statuspatch"
	"github.com/kmaint/kmaint/test/gen"
)

// A pool whose status an earlier operator wrote whole, with merge patches
// under one field manager, is taken over by the gate and aftercare, each
// its own part: what the earlier status said and no longer holds (a
// blocking query, a halt) goes, and no field has both as writers. The
// earlier writer's entry keeps the fields whose values it wrote, beside
// theirs (an apply shares a field with the writer of the same value): only
// a write of the pool itself, which the operator is not granted, could
// drop it.
func TestAnEarlierOperatorsStatusIsTakenOver(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const pool = "earlier"
	createPool(t, gen.Pool(pool, intstr.FromInt32(1)))
	node := createNodes(t, pool, pool, 1)[0]

	p := getPool(g, pool)
	long := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	p.Status = v1alpha1.MaintenancePoolStatus{ObservedGeneration: p.Generation, Nodes: 1, Ready: 1, Updated: 1, MaxUnavailable: 1,
		BlockingQuery: &v1alpha1.BlockingQueryStatus{Name: "gone", Reason: v1alpha1.BlockingQueryReason, LastEvaluationTime: long},
		Halt:          &v1alpha1.PoolHalt{Since: long, Resume: v1alpha1.ResumeManual, Nodes: []v1alpha1.HaltedNode{{Node: node, Check: "gone", Time: long}}}}
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.HaltedCondition, Status: metav1.ConditionTrue,
		Reason: v1alpha1.HealthCheckFailedReason, Message: "node failed", LastTransitionTime: long})
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.BlockedCondition, Status: metav1.ConditionTrue,
		Reason: v1alpha1.HaltedReason, Message: "halted", LastTransitionTime: long})
	// As the earlier operator wrote it: every field (statuspatch.Whole).
	g.Expect(bed.Client.Status().Patch(ctx, p, statuspatch.Whole{}, client.FieldOwner("kmaint-operator"))).To(Succeed())

	startOperator(t)
	g.Eventually(func(g Gomega) {
		p := getPool(g, pool)
		g.Expect(p.Status.BlockingQuery).To(BeNil())
		g.Expect(p.Status.Halt).To(BeNil())
		g.Expect(meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.HaltedCondition)).To(BeFalse())
		g.Expect(meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.BlockedCondition)).To(BeFalse())
		expectOneWriterPerStatusField(g, pool, poolstatus.GateManager, poolstatus.AftercareManager)
	}, timeout).Should(Succeed())
}
