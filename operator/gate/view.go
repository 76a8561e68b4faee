package gate

import (
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/operator/api/protocol"
)

// nodeView is what the gate reads off one Node.
type nodeView struct {
	node *corev1.Node

	bootID        string
	ready         bool
	unschedulable bool
	// cordoned is true when kmaint's cordon marker is on the node.
	cordoned bool

	// requested holds the node's requests when they were made in its current
	// boot; requests of an earlier boot are satisfied and not shown.
	requested *protocol.Requested
	// requestedBoot is the boot named by reboot-requested, whichever it is.
	requestedBoot string
	admission     *protocol.Admission
	approved      string
	drainFailure  *protocol.DrainFailure
	daemon        *protocol.DaemonState

	// otherPools names the other pools that select the node too.
	otherPools []string
	// malformed describes annotations that could not be read.
	malformed error
	// inflight is true when the gate admitted the node and its cache does
	// not show that yet.
	inflight bool
	// windowOpen is true when the windows of one of the node's requests
	// (its pool's, its policy's, or none with ignoreWindows) let it be
	// admitted now; the one reboot satisfies them all.
	windowOpen bool
	// nextOpening is, while windowOpen is false, the earliest moment one of
	// the node's requests may be admitted; zero when unknown or never.
	nextOpening time.Time
	// windowProblems say why some of the node's requests are never admitted
	// as things stand (their policy's windows cannot be read).
	windowProblems []string
}

func newNodeView(node *corev1.Node) nodeView {
	v := nodeView{
		node:          node,
		bootID:        protocol.BootID(node),
		ready:         protocol.Ready(node),
		unschedulable: node.Spec.Unschedulable,
		cordoned:      node.Annotations[protocol.Cordoned] == "true",
		approved:      node.Annotations[protocol.RebootApproved],
		// No windows unless observe finds some.
		windowOpen: true,
	}
	var errs []error
	var req protocol.Requested
	if ok, err := protocol.Decode(node, protocol.RebootRequested, &req); err != nil {
		errs = append(errs, err)
	} else if ok {
		v.requestedBoot = req.BootID
		if req.BootID == v.bootID && len(req.Requests) > 0 {
			v.requested = &req
		}
	}
	var adm protocol.Admission
	if ok, err := protocol.Decode(node, protocol.Admitted, &adm); err != nil {
		errs = append(errs, err)
		// An admission we cannot read still holds its slot: counting the node
		// available could put the pool over budget.
		v.admission = &protocol.Admission{}
	} else if ok {
		v.admission = &adm
	}
	var failure protocol.DrainFailure
	if ok, err := protocol.Decode(node, protocol.DrainFailed, &failure); err != nil {
		errs = append(errs, err)
	} else if ok {
		v.drainFailure = &failure
	}
	var state protocol.DaemonState
	if ok, err := protocol.Decode(node, protocol.State, &state); err != nil {
		errs = append(errs, err)
	} else if ok {
		v.daemon = &state
	}
	v.malformed = errors.Join(errs...)
	return v
}

// unavailable reports whether the node counts against its pool's budget.
func (v nodeView) unavailable() bool {
	return v.inflight || v.admission != nil || v.approved != "" || !v.ready || v.unschedulable
}

// waiting reports whether the node asks to be admitted: it has requests in
// its current boot that no failed drain already covers, and nothing makes it
// ineligible.
func (v nodeView) waiting() bool {
	if v.requested == nil || v.inflight || v.admission != nil || v.approved != "" || len(v.otherPools) > 0 || v.malformed != nil {
		return false
	}
	return v.drainFailure == nil || !v.drainFailure.Covers(*v.requested)
}

// rebooting reports whether the node is approved and not yet back.
func (v nodeView) rebooting() bool { return v.approved != "" }

// draining reports whether the node is admitted and not yet approved.
func (v nodeView) draining() bool { return v.admission != nil && v.approved == "" }

// degraded reports whether the daemon says the approved reboot did not
// happen, or the drain for the node's current requests failed.
func (v nodeView) degraded() bool {
	if v.daemon != nil && v.daemon.Phase == protocol.DaemonDegraded {
		return true
	}
	return v.requested != nil && v.drainFailure != nil && v.drainFailure.Covers(*v.requested)
}

// requestTime is when the node's oldest outstanding request was made.
func (v nodeView) requestTime() time.Time {
	if v.requested == nil {
		return time.Time{}
	}
	return v.requested.Earliest()
}

// rebootDone reports whether the approved reboot has completed: the node is
// Ready with a boot ID other than the approved one, and its daemon no longer
// shows a request of the approved boot. A Ready node with the old boot ID has
// not rebooted, however it looks.
func (v nodeView) rebootDone() bool {
	return v.approved != "" && v.ready && v.bootID != "" && v.bootID != v.approved && v.requestedBoot != v.approved
}

// admissionVoid reports whether an admission that was not yet approved no
// longer stands for anything: the node rebooted by other means, or its
// requests are gone.
func (v nodeView) admissionVoid() bool {
	if v.admission == nil || v.approved != "" {
		return false
	}
	return v.bootID != v.admission.BootID || v.requested == nil
}
