package maintenance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/index"
)

// reportSuspect warns, on the Node, of requests its daemon could not have
// raised honestly, which a stolen daemon token would: one dated further
// from when kmaint recorded it than a late daemon or a clock explains
// (its place in the queue is bounded all the same, pools.QueueTime), and
// one that names another node's NodeMaintenance (it gets none of that
// object's settings, pools.Settings). Neither asks for more than a reboot
// of the node itself, which its daemon may ask for; the warning is for the
// person who must find out why a node's identity writes such things.
func (r *Reconciler) reportSuspect(ctx context.Context, state *protocol.NodeState, items []v1alpha1.NodeMaintenance, now time.Time) error {
	if state == nil || state.Current() == nil {
		return nil
	}
	node, requested := state.Node, state.Current()
	own := make(map[string]*v1alpha1.NodeMaintenance, len(items))
	for i := range items {
		own[items[i].RequestID()] = &items[i]
	}
	var dated []string
	var unknown []protocol.Request
	for _, req := range requested.Requests {
		nm, ok := own[req.ID]
		switch {
		case ok && nm.Spec.Source.RaisedOnNode() && !nm.CreationTimestamp.IsZero():
			if msg := datedOff(req, nm.CreationTimestamp.Time); msg != "" {
				dated = append(dated, msg)
			}
		case !ok && req.Source.RaisedOnNode():
			// Recorded in this reconcile, or never (the node's boot has its
			// share of records): kmaint learns of it now.
			if msg := datedOff(req, now); msg != "" {
				dated = append(dated, msg)
			}
		case !ok:
			unknown = append(unknown, req)
		}
	}
	if len(dated) > 0 && r.firstWarning(node.Name, v1alpha1.RequestTimeBoundedReason, requested.BootID+"/"+strings.Join(dated, "/")) {
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, v1alpha1.RequestTimeBoundedReason, "Queue",
			"node %s's daemon dated requests far from when kmaint recorded them: %s. kmaint queues a request as made at most %s before it recorded it, and never after",
			node.Name, cut(strings.Join(dated, "; "), 600), v1alpha1.MaxRequestLead)
	}
	// The same unknown ids are looked up once: a daemon that keeps them
	// and writes its Node again and again does not make the operator read
	// every open record each time.
	ids := make([]string, 0, len(unknown))
	for _, req := range unknown {
		ids = append(ids, req.ID)
	}
	if len(unknown) == 0 || !r.firstWarning(node.Name, "lookup/"+v1alpha1.ForeignRequestReason, requested.BootID+"/"+strings.Join(ids, "/")) {
		return nil
	}
	foreign, err := r.foreignRequests(ctx, node.Name, unknown)
	if err != nil {
		r.forgetWarning(node.Name, "lookup/"+v1alpha1.ForeignRequestReason)
		return err
	}
	if len(foreign) == 0 {
		return nil
	}
	if r.firstWarning(node.Name, v1alpha1.ForeignRequestReason, requested.BootID+"/"+strings.Join(foreign, "/")) {
		ctrl.LoggerFrom(ctx).Info("Request names another node's NodeMaintenance", "bootID", requested.BootID, "requests", foreign)
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, v1alpha1.ForeignRequestReason, "Queue",
			"node %s's daemon raised requests of other nodes: %s. A request applies only to its own node: these get none of those NodeMaintenances' settings and queue as made now; a node's daemon does not raise them unless its identity is misused",
			node.Name, cut(strings.Join(foreign, "; "), 600))
	}
	return nil
}

// datedOff says how a request started on the node is dated off when kmaint
// recorded it (or learns of it); "" when it is not. The id is quoted: the
// daemon wrote it, and an id not yet checked may hold anything.
func datedOff(req protocol.Request, recorded time.Time) string {
	switch {
	case req.Time.Before(recorded.Add(-v1alpha1.MaxRequestLead)):
		return fmt.Sprintf("%q at %s, recorded at %s", req.ID, req.Time.UTC().Format(time.RFC3339), recorded.UTC().Format(time.RFC3339))
	case req.Time.After(recorded.Add(v1alpha1.MaxClockSkew)):
		return fmt.Sprintf("%q at %s, recorded before, at %s", req.ID, req.Time.UTC().Format(time.RFC3339), recorded.UTC().Format(time.RFC3339))
	}
	return ""
}

// foreignRequests names the requests among reqs that are the open
// NodeMaintenances of another node than node, each with that node.
// Requests from the API without a NodeMaintenance of their own node are
// rare (one withdrawn a moment ago), so the open records are read only
// then.
func (r *Reconciler) foreignRequests(ctx context.Context, node string, reqs []protocol.Request) ([]string, error) {
	var open v1alpha1.NodeMaintenanceList
	if err := r.List(ctx, &open, client.MatchingFields{index.State: index.Open}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list open maintenances: %w", err)
	}
	var out []string
	for i := range open.Items {
		nm := &open.Items[i]
		if nm.Spec.NodeName == node {
			continue
		}
		id := nm.RequestID()
		if slices.ContainsFunc(reqs, func(req protocol.Request) bool { return req.ID == id }) {
			out = append(out, fmt.Sprintf("%q (NodeMaintenance %s of node %s)", id, nm.Name, nm.Spec.NodeName))
		}
	}
	slices.Sort(out)
	return out, nil
}
