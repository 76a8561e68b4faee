package cmd

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/operator/api/protocol"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
)

// NodePhase is where a node is on the reboot path, as the status command
// shows it.
type NodePhase string

// The phases of a node, in the order a reboot passes through them.
const (
	// NodeIdle: nothing asked for.
	NodeIdle NodePhase = "idle"
	// NodeRequested: a NodeMaintenance is open that the node's daemon has
	// not raised yet.
	NodeRequested NodePhase = "requested"
	// NodeWaiting: the daemon raised the node's requests; the pool has not
	// admitted it.
	NodeWaiting NodePhase = "waiting"
	// NodeDraining: admitted, cordoned, pods being evicted.
	NodeDraining NodePhase = "draining"
	// NodeRebooting: drained and approved to reboot, not yet back.
	NodeRebooting NodePhase = "rebooting"
	// NodeDegraded: the approved reboot did not happen, the drain failed, or
	// the node's kmaint annotations cannot be read.
	NodeDegraded NodePhase = "degraded"
)

// nodeState is one row of the status command's node table.
type nodeState struct {
	Phase NodePhase
	// Reason says why: the requests' reasons, or what went wrong.
	Reason string
	// Since is when the node entered the phase, when known.
	Since time.Time
}

// phaseOf tells a node's phase from its kmaint annotations (the node
// protocol), and from its open NodeMaintenances, oldest first, for requests
// its daemon has not raised yet.
func phaseOf(node *corev1.Node, open []v1alpha1.NodeMaintenance) nodeState {
	boot := protocol.BootID(node)
	var req protocol.Requested
	var adm protocol.Admission
	var failure protocol.DrainFailure
	var daemon protocol.DaemonState
	hasReq, err1 := protocol.Decode(node, protocol.RebootRequested, &req)
	hasAdm, err2 := protocol.Decode(node, protocol.Admitted, &adm)
	hasFailure, err3 := protocol.Decode(node, protocol.DrainFailed, &failure)
	hasDaemon, err4 := protocol.Decode(node, protocol.State, &daemon)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nodeState{Phase: NodeDegraded, Reason: err.Error()}
	}
	current := hasReq && req.BootID == boot && len(req.Requests) > 0
	approved := node.Annotations[protocol.RebootApproved]

	switch {
	case hasDaemon && daemon.Phase == protocol.DaemonDegraded:
		return nodeState{Phase: NodeDegraded, Reason: daemon.Message, Since: daemon.Since}
	case current && hasFailure && failure.Covers(req):
		return nodeState{Phase: NodeDegraded, Reason: fmt.Sprintf("drain failed (%s): %s", failure.Reason, failure.Message), Since: failure.Time}
	case approved != "" && approved == boot:
		since := time.Time{}
		if hasDaemon && daemon.Phase == protocol.DaemonRebooting {
			since = daemon.Since
		}
		return nodeState{Phase: NodeRebooting, Reason: reasons(req, current, open), Since: since}
	case approved != "":
		return nodeState{Phase: NodeRebooting, Reason: fmt.Sprintf("coming back with boot %s", or(boot))}
	case hasAdm:
		return nodeState{Phase: NodeDraining, Reason: reasons(req, current, open), Since: adm.Time}
	case current:
		return nodeState{Phase: NodeWaiting, Reason: reasons(req, current, open), Since: req.Earliest()}
	case len(open) > 0:
		return nodeState{Phase: NodeRequested, Reason: reasons(req, false, open), Since: open[0].CreationTimestamp.Time}
	}
	var why []string
	if !protocol.Ready(node) {
		why = append(why, "not Ready")
	}
	if node.Spec.Unschedulable {
		why = append(why, "cordoned")
	}
	return nodeState{Phase: NodeIdle, Reason: strings.Join(why, ", ")}
}

// reasons lists the node's requests as "source: reason": those raised in
// its current boot, else those of its open NodeMaintenances.
func reasons(req protocol.Requested, current bool, open []v1alpha1.NodeMaintenance) string {
	var rs []string
	add := func(source v1alpha1.Source, reason string) {
		if r := fmt.Sprintf("%s: %s", source, reason); !slices.Contains(rs, r) {
			rs = append(rs, r)
		}
	}
	if current {
		for _, r := range req.Requests {
			add(r.Source, r.Reason)
		}
	} else {
		for _, nm := range open {
			add(nm.Spec.Source, nm.Spec.Reason)
		}
	}
	return strings.Join(rs, "; ")
}
