package cmd

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// nodeState is one row of the status command's node table.
type nodeState struct {
	// Phase is the stage of the reboot the node is in, in the words of the
	// NodeMaintenance phases (protocol.Stage).
	Phase protocol.Stage
	// Reason says why: the requests' reasons, or what went wrong.
	Reason string
	// Since is when the node entered the stage, when known.
	Since time.Time
}

// phaseOf tells a node's stage as the node protocol reads it, and from its
// open NodeMaintenances, oldest first, for requests its daemon has not
// raised yet.
func phaseOf(node *corev1.Node, open []v1alpha1.NodeMaintenance) nodeState {
	st, _ := protocol.Read(node)
	pos := st.Position(len(open) > 0)
	out := nodeState{Phase: pos.Stage, Reason: pos.Message, Since: pos.Since}
	cur := st.Current()
	switch pos.Stage {
	case protocol.StageIdle:
		var why []string
		if !st.Ready {
			why = append(why, "not Ready")
		}
		if st.Unschedulable {
			why = append(why, "cordoned")
		}
		// The host wants a reboot kmaint does not ask for: a reboot loop
		// held back, or a sentinel it cannot read.
		if held := st.SentinelHeld(); held != "" {
			why = append(why, held)
			if out.Since.IsZero() {
				out.Since = st.Daemon.Sentinel.Since
			}
		}
		if o := protocol.NodeOptOut(node); o != nil {
			why = append(why, "opted out ("+o.Message+")")
		}
		out.Reason = strings.Join(why, ", ")
	case v1alpha1.PhasePending:
		out.Reason, out.Since = reasons(nil, open), open[0].CreationTimestamp.Time
	case v1alpha1.PhaseRequested, v1alpha1.PhaseDraining, v1alpha1.PhaseApproved:
		out.Reason = reasons(cur, open)
		// A drain that timed out and is tried again says which attempt.
		if r := st.Retrying(); r != nil && pos.Stage == v1alpha1.PhaseRequested {
			out.Reason += "; " + r.Waiting()
		} else if r != nil && pos.Stage == v1alpha1.PhaseDraining {
			out.Reason += fmt.Sprintf(" (drain attempt %d of %d)", r.Attempts+1, r.MaxAttempts)
		}
		// What holds it first: a person reading the line wants the opt-out
		// to lift, not the request they already know of.
		if o := st.OptOut(); o != nil {
			out.Reason = fmt.Sprintf("opted out (%s): %s; requested: %s", o.Reason, o.Message, out.Reason)
		}
	case v1alpha1.PhaseSettling:
		out.Reason = settleReason(st.Settle, open)
	case v1alpha1.PhaseRebooting:
		if out.Reason == "" {
			out.Reason = reasons(cur, open)
		}
	}
	return out
}

// reasons lists the node's requests as "source: reason": those raised in
// its current boot, else those of its open NodeMaintenances.
func reasons(current *protocol.Requested, open []v1alpha1.NodeMaintenance) string {
	var rs []string
	add := func(source v1alpha1.Source, reason string) {
		// A reason read off the node may come from any journal writer.
		if r := fmt.Sprintf("%s: %s", source, v1alpha1.FitReason(reason)); !slices.Contains(rs, r) {
			rs = append(rs, r)
		}
	}
	if current != nil {
		for _, r := range current.Requests {
			add(r.Source, r.Reason)
		}
	} else {
		for _, nm := range open {
			add(nm.Spec.Source, nm.Spec.Reason)
		}
	}
	return strings.Join(rs, "; ")
}
