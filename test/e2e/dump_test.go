package e2e_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// logStateOnFailure logs, when the test fails, what a person would look at
// first: each pool's counts and conditions (why requests wait, what blocks a
// drain, what is degraded), the workload's disruption budgets, and the pods
// that are not running. A run that stalls on a loaded CI machine then says
// where.
func logStateOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		var pools v1alpha1.MaintenancePoolList
		if err := bed.Client.List(ctx, &pools); err != nil {
			t.Logf("list pools: %v", err)
		}
		for _, p := range pools.Items {
			t.Logf("pool %s: %d nodes, %d unavailable, %d draining, %d rebooting, %d degraded", p.Name,
				p.Status.Nodes, p.Status.Unavailable, p.Status.Draining, p.Status.Rebooting, p.Status.Degraded)
			for _, c := range p.Status.Conditions {
				t.Logf("  %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		var budgets policyv1.PodDisruptionBudgetList
		if err := bed.Client.List(ctx, &budgets); err != nil {
			t.Logf("list budgets: %v", err)
		}
		for _, b := range budgets.Items {
			t.Logf("budget %s/%s: %d allowed, %d of %d healthy (%d desired), %d disrupted", b.Namespace, b.Name,
				b.Status.DisruptionsAllowed, b.Status.CurrentHealthy, b.Status.ExpectedPods, b.Status.DesiredHealthy, len(b.Status.DisruptedPods))
		}
		var pods corev1.PodList
		if err := bed.Client.List(ctx, &pods); err != nil {
			t.Logf("list pods: %v", err)
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
				t.Logf("pod %s/%s on %s: %s, terminating %v", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil)
			}
		}
	})
}
