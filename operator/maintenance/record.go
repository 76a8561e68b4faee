package maintenance

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/operator/api/protocol"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
)

// record creates a NodeMaintenance for each request of the node's current
// boot that started on the node and has none yet, so that every reboot
// request, whatever its source, shows up in `kubectl get nodemaintenances`.
func (r *Reconciler) record(ctx context.Context, state *protocol.NodeState, items []v1alpha1.NodeMaintenance) error {
	if state == nil || state.Current() == nil {
		return nil
	}
	node, requested := state.Node, state.Current()
	known := map[string]bool{}
	for i := range items {
		known[items[i].RequestID()] = true
		known[items[i].Name] = true
	}
	var errs []error
	for _, req := range requested.Requests {
		if known[req.ID] || known[recordName(node.Name, req)] || !req.Source.RaisedOnNode() {
			continue
		}
		// The label is the id itself or absent, never a hash of it, since
		// RequestID reads it back; the status carries every id.
		labels := map[string]string{}
		if v1alpha1.LabelValue(req.ID) == req.ID {
			labels[v1alpha1.RequestIDLabel] = req.ID
		}
		nm := &v1alpha1.NodeMaintenance{
			ObjectMeta: metav1.ObjectMeta{
				Name:   recordName(node.Name, req),
				Labels: labels,
			},
			Spec: v1alpha1.NodeMaintenanceSpec{
				NodeName: node.Name,
				Type:     v1alpha1.RebootMaintenance,
				Reason:   v1alpha1.FitReason(req.Reason),
				Source:   req.Source,
			},
		}
		if err := r.Create(ctx, nm); apierrors.IsAlreadyExists(err) {
			continue // made by an earlier reconcile that the cache does not show yet
		} else if err != nil {
			errs = append(errs, fmt.Errorf("record %s request %s of node %s: %w", req.Source, req.ID, node.Name, err))
			continue
		}
		// The label cannot carry every id; the status can.
		nm.Status.RequestID = req.ID
		if err := r.Status().Update(ctx, nm); err != nil {
			errs = append(errs, fmt.Errorf("set request id of maintenance %s: %w", nm.Name, err))
		}
	}
	return errors.Join(errs...)
}

// recordName is deterministic, so that a restarted operator finds the record
// it made instead of making a second one.
func recordName(node string, req protocol.Request) string {
	return v1alpha1.ObjectName(node, string(req.Source), req.ID)
}
