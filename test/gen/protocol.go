package gen

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// The node protocol's annotations as NodeOptions, each written the way its
// one writer writes it. Times are parameters: each test has its own clock.

// Annotations sets annotations from key, value pairs: those with no builder
// here, and malformed values.
func Annotations(kv ...string) NodeOption {
	return func(n *corev1.Node) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			n.Annotations[kv[i]] = kv[i+1]
		}
	}
}

// Req returns request id as a daemon raises it: from source, journaled at
// at, with the reason "test <id>".
func Req(id string, source v1alpha1.Source, at time.Time) protocol.Request {
	return protocol.Request{ID: id, Source: source, Reason: "test " + id, Time: at}
}

// Requested writes the daemon's reboot-requested annotation: reqs,
// outstanding in boot.
func Requested(boot string, reqs ...protocol.Request) NodeOption {
	return Annotations(protocol.RebootRequested, protocol.Encode(protocol.Requested{BootID: boot, Requests: reqs}))
}

// RequestedIDs is Requested with a Req of each id, all from source and
// journaled at at.
func RequestedIDs(boot string, source v1alpha1.Source, at time.Time, ids ...string) NodeOption {
	reqs := make([]protocol.Request, 0, len(ids))
	for _, id := range ids {
		reqs = append(reqs, Req(id, source, at))
	}
	return Requested(boot, reqs...)
}

// Admitted writes the gate's admitted annotation: the requests ids of boot,
// admitted (and their drain begun) at at.
func Admitted(boot string, at time.Time, ids ...string) NodeOption {
	return Annotations(protocol.Admitted, protocol.Encode(protocol.Admission{BootID: boot, Requests: ids, Time: at}))
}

// Approved writes the gate's reboot-approved annotation for boot, and, as
// the gate never approves a boot it did not admit, the admission of boot
// when the node has none (an Admitted given after it replaces that one).
// A bare approval, as a person might write one, is
// Annotations(protocol.RebootApproved, value).
func Approved(boot string) NodeOption {
	return func(n *corev1.Node) {
		if _, ok := n.Annotations[protocol.Admitted]; !ok {
			Admitted(boot, time.Time{})(n)
		}
		Annotations(protocol.RebootApproved, boot)(n)
	}
}

// ApprovedAt writes the gate's approval of boot at the given time, with the
// admission it approved (admitted at the same time).
func ApprovedAt(boot string, at time.Time, ids ...string) NodeOption {
	return Annotations(protocol.Admitted, protocol.Encode(protocol.Admission{BootID: boot, Requests: ids, Time: at, ApprovedAt: at}),
		protocol.RebootApproved, boot)
}

// NodeNotBack writes the gate's node-not-back annotation: the reboot of
// approvedBoot, approved at approvedAt, was reported not back at since.
func NodeNotBack(approvedBoot string, approvedAt, since time.Time) NodeOption {
	return Annotations(protocol.NodeNotBack, protocol.Encode(protocol.NotBack{ApprovedBoot: approvedBoot, ApprovedAt: approvedAt, Since: since}))
}

// DrainFailed writes the gate's drain-failed annotation: the drain for the
// requests ids of boot timed out at at, blocked by what message says.
func DrainFailed(boot string, at time.Time, message string, ids ...string) NodeOption {
	return Annotations(protocol.DrainFailed, protocol.Encode(protocol.DrainFailure{
		BootID: boot, Requests: ids, Time: at, Reason: v1alpha1.DrainTimeoutReason, Message: message,
	}))
}

// DaemonState writes the daemon's state annotation: in phase for boot since
// since, saying message.
func DaemonState(phase protocol.DaemonPhase, boot, message string, since time.Time) NodeOption {
	return Annotations(protocol.State, protocol.Encode(protocol.DaemonState{Phase: phase, BootID: boot, Message: message, Since: since}))
}

// RebootUnconfirmed writes the gate's reboot-unconfirmed annotation: the
// node came back from the reboot approved for approvedBoot with boot, first
// seen at since, and its daemon has not confirmed it.
func RebootUnconfirmed(approvedBoot, boot string, since time.Time) NodeOption {
	return Annotations(protocol.RebootUnconfirmed, protocol.Encode(protocol.UnconfirmedReboot{ApprovedBoot: approvedBoot, BootID: boot, Since: since}))
}
