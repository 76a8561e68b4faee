package policy

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kmaint/kmaint/operator/api/protocol"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
)

// facts is what one reconcile reads off the cluster for a policy.
type facts struct {
	// nodes are all nodes; selected the names the policy's selector picks.
	nodes    []corev1.Node
	selected map[string]bool
	// lastReboot is each node's last completed reboot, whatever its source.
	lastReboot map[string]time.Time
	// open holds nodes with an open request of any source.
	open map[string]bool
	// ownOpen counts this policy's open requests.
	ownOpen int
	// ownDone is this policy's latest succeeded request per node.
	ownDone map[string]*v1alpha1.NodeMaintenance
	// boot is each node's current boot ID.
	boot map[string]string
	// names holds every NodeMaintenance's name.
	names map[string]bool
}

func (r *Reconciler) observe(ctx context.Context, p *v1alpha1.RebootPolicy) (*facts, error) {
	sel := labels.Everything()
	if p.Spec.NodeSelector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(p.Spec.NodeSelector); err != nil {
			return nil, &specError{field: "spec.nodeSelector", err: err}
		}
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	var nms v1alpha1.NodeMaintenanceList
	if err := r.List(ctx, &nms); err != nil {
		return nil, fmt.Errorf("list node maintenances: %w", err)
	}
	now := r.Clock.Now()
	f := &facts{
		nodes:      nodes.Items,
		selected:   map[string]bool{},
		lastReboot: map[string]time.Time{},
		open:       map[string]bool{},
		ownDone:    map[string]*v1alpha1.NodeMaintenance{},
		names:      make(map[string]bool, len(nms.Items)),
		boot:       make(map[string]string, len(nodes.Items)),
	}
	for i := range nodes.Items {
		f.boot[nodes.Items[i].Name] = protocol.BootID(&nodes.Items[i])
		if sel.Matches(labels.Set(nodes.Items[i].Labels)) {
			f.selected[nodes.Items[i].Name] = true
		}
	}
	for i := range nms.Items {
		nm := &nms.Items[i]
		node, own := nm.Spec.NodeName, nm.Spec.Policy == p.Name
		f.names[nm.Name] = true
		if !nm.Status.Phase.Done() {
			f.open[node] = true
			if own {
				f.ownOpen++
			}
			continue
		}
		done := nm.Status.PhaseTimes.Succeeded
		if nm.Status.Phase != v1alpha1.PhaseSucceeded || done == nil {
			continue
		}
		at, ok := rebootedAt(nm, now)
		if !ok {
			r.Recorder.Eventf(nm, nil, corev1.EventTypeWarning, v1alpha1.FutureTimeReason, "Cooldown",
				"status.phaseTimes.succeeded (%s) lies more than %s past the operator's clock; cooldowns count from the record's creation (%s) instead",
				done.UTC().Format(time.RFC3339), v1alpha1.MaxClockSkew, nm.CreationTimestamp.UTC().Format(time.RFC3339))
		}
		if at.After(f.lastReboot[node]) {
			f.lastReboot[node] = at
		}
		if prev := f.ownDone[node]; own && (prev == nil || done.Time.After(prev.Status.PhaseTimes.Succeeded.Time)) {
			f.ownDone[node] = nm
		}
	}
	return f, nil
}

// rebootedAt is when a succeeded request's node rebooted, for cooldowns, by
// the operator's clock: status.phaseTimes.succeeded, unless it lies further
// in the future than MaxClockSkew (written by hand, or by a clock far off),
// which would hold every cooldown of the node until then. Then it is the
// record's creation, which the API server stamped and which precedes the
// reboot, and ok is false.
func rebootedAt(nm *v1alpha1.NodeMaintenance, now time.Time) (at time.Time, ok bool) {
	latest := now.Add(v1alpha1.MaxClockSkew)
	if done := nm.Status.PhaseTimes.Succeeded.Time; !done.After(latest) {
		return done, true
	}
	if created := nm.CreationTimestamp.Time; !created.After(latest) {
		return created, false
	}
	return time.Time{}, false
}

// specError is a policy spec the operator cannot use; it is reported in the
// status and not retried until the spec changes.
type specError struct {
	field string
	err   error
}

func (e *specError) Error() string { return fmt.Sprintf("%s: %v", e.field, e.err) }
func (e *specError) Unwrap() error { return e.err }
