package report

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Collect lists what Build needs from a cluster: every NodeMaintenance,
// MaintenancePool and Node. The reader's scheme must know kmaint's types
// (scheme.New has them).
func Collect(ctx context.Context, c client.Reader) ([]v1alpha1.NodeMaintenance, []v1alpha1.MaintenancePool, []corev1.Node, error) {
	var nms v1alpha1.NodeMaintenanceList
	if err := c.List(ctx, &nms); err != nil {
		return nil, nil, nil, fmt.Errorf("list NodeMaintenances: %w", err)
	}
	var mps v1alpha1.MaintenancePoolList
	if err := c.List(ctx, &mps); err != nil {
		return nil, nil, nil, fmt.Errorf("list MaintenancePools: %w", err)
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, nil, nil, fmt.Errorf("list nodes: %w", err)
	}
	return nms.Items, mps.Items, nodes.Items, nil
}
