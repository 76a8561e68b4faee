package maintenance

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kmaint/kmaint/operator/api/protocol"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
)

// maxReason is the longest reason a NodeMaintenance accepts.
const maxReason = 512

// record creates a NodeMaintenance for each request of the node's current
// boot that started on the node and has none yet, so that every reboot
// request, whatever its source, shows up in `kubectl get nodemaintenances`.
func (r *Reconciler) record(ctx context.Context, node *corev1.Node, items []v1alpha1.NodeMaintenance) error {
	if node == nil {
		return nil
	}
	var requested protocol.Requested
	if ok, err := protocol.Decode(node, protocol.RebootRequested, &requested); !ok || err != nil || requested.BootID != protocol.BootID(node) {
		return nil
	}
	known := map[string]bool{}
	for i := range items {
		known[requestID(&items[i])] = true
		known[items[i].Name] = true
	}
	var errs []error
	for _, req := range requested.Requests {
		if known[req.ID] || known[recordName(node.Name, req)] || !req.Source.RaisedOnNode() {
			continue
		}
		nm := &v1alpha1.NodeMaintenance{
			ObjectMeta: metav1.ObjectMeta{
				Name:   recordName(node.Name, req),
				Labels: map[string]string{RequestIDLabel: labelValue(req.ID)},
			},
			Spec: v1alpha1.NodeMaintenanceSpec{
				NodeName: node.Name,
				Type:     v1alpha1.RebootMaintenance,
				Reason:   reason(req.Reason),
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
	id := strings.ToLower(req.ID)
	id = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, id)
	suffix := fmt.Sprintf("-%s-%s", req.Source, id)
	if len(suffix) > 80 {
		suffix = suffix[:80]
	}
	name := node
	if len(name)+len(suffix) > validation.DNS1123SubdomainMaxLength {
		name = name[:validation.DNS1123SubdomainMaxLength-len(suffix)]
	}
	return strings.Trim(name+suffix, "-.")
}

func labelValue(id string) string {
	if len(validation.IsValidLabelValue(id)) == 0 {
		return id
	}
	return ""
}

func reason(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "no reason given"
	}
	if len(s) > maxReason {
		return s[:maxReason-len("…")] + "…"
	}
	return s
}
