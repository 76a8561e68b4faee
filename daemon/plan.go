package daemon

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/operator/api/protocol"
	"github.com/kmaint/kmaint/operator/api/v1alpha1"
)

// facts is everything one sync decides from.
type facts struct {
	now    time.Time
	bootID string
	// entries are kmaint's root-written journal entries of every boot, in
	// journal order.
	entries []journal.Entry
	node    *corev1.Node
	// maintenances are the NodeMaintenances of this node.
	maintenances []v1alpha1.NodeMaintenance
	// rebootTimeout is how long after asking for a reboot the boot ID must
	// have changed before the daemon calls the reboot failed.
	rebootTimeout time.Duration
}

// report is what the daemon tells a NodeMaintenance: when and in which boot
// its request was journaled.
type report struct {
	name   string
	bootID string
	time   time.Time
}

// plan is what one sync does, in this order: journal new requests, patch the
// node's annotations, report to NodeMaintenances, and reboot.
type plan struct {
	// write are request entries to journal.
	write []journal.Entry
	// annotations maps each annotation to change to its new value; nil
	// removes it.
	annotations map[string]*string
	// reports are journal records for NodeMaintenances.
	reports []report
	// reboot, when set, is the rebooting entry to journal right before the
	// reboot.
	reboot *journal.Entry
	// becameDegraded is true when this sync finds the approved reboot did
	// not happen.
	becameDegraded bool
	// ignoredApproval is an approval naming another boot, when there is one.
	ignoredApproval string
	// recheckAt is when to look again for a reboot that did not happen.
	recheckAt time.Time
	// state is the daemon's state for the state annotation and metrics.
	state protocol.DaemonState
	// outstanding are this boot's outstanding requests.
	outstanding []protocol.Request
}

// configReason says why a config request reboots. It always fits the
// journal: an entry whose reason is too long is rejected when read back, so
// it would be journaled again on every sync and never raised. Two configs of
// the pool's longest (253 bytes) do not fit together.
func configReason(from, desired string) string {
	reason := fmt.Sprintf("config %s, pool wants %s", from, desired)
	if len(reason) > v1alpha1.MaxReasonLength {
		reason = "pool wants config " + desired
	}
	if len(reason) > v1alpha1.MaxReasonLength {
		reason = strings.ToValidUTF8(reason[:v1alpha1.MaxReasonLength], "")
	}
	return reason
}

// decide plans a sync. It is a pure function of the facts.
func decide(f facts) plan {
	p := plan{annotations: map[string]*string{}}
	ann := map[string]string{}
	if f.node != nil && f.node.Annotations != nil {
		ann = f.node.Annotations
	}

	// Index the journal: every request ever journaled (a request belongs to
	// the first boot it was journaled in), this boot's requests, and this
	// boot's rebooting entry.
	journaled := map[string]journal.Entry{}
	var thisBoot []journal.Entry
	var rebooting *journal.Entry
	applied := ""
	for _, e := range f.entries {
		switch e.Kind {
		case journal.KindRequest:
			if _, seen := journaled[e.ID]; seen {
				continue
			}
			journaled[e.ID] = e
			if e.BootID == f.bootID {
				thisBoot = append(thisBoot, e)
			} else if e.Config != "" {
				// A config requested in an earlier boot was applied by the
				// reboot that ended that boot.
				applied = e.Config
			}
		case journal.KindRebooting:
			if e.BootID == f.bootID && rebooting == nil {
				rebooting = &e
			}
		}
	}

	// Requests that start in the API: journal each accepted one once.
	for _, nm := range f.maintenances {
		if nm.Spec.Source.RaisedOnNode() {
			continue
		}
		id := string(nm.UID)
		if e, ok := journaled[id]; ok {
			if nm.Status.JournaledBootID == "" {
				p.reports = append(p.reports, report{name: nm.Name, bootID: e.BootID, time: e.Time})
			}
			continue
		}
		if nm.Status.Phase == v1alpha1.PhasePending {
			p.write = append(p.write, journal.Entry{Kind: journal.KindRequest, ID: id, Source: nm.Spec.Source, Reason: nm.Spec.Reason, Time: f.now})
		}
	}

	// Config: report what the last reboot applied, and request a reboot for
	// a config the pool wants and this boot has not asked for yet.
	current := ann[protocol.CurrentConfig]
	if applied != "" && applied != current {
		setAnnotation(p.annotations, ann, protocol.CurrentConfig, &applied)
		current = applied
	}
	if desired := ann[protocol.DesiredConfig]; desired != "" && desired != current {
		id := v1alpha1.ConfigRequestID(f.bootID, desired)
		if _, ok := journaled[id]; !ok {
			from := current
			if from == "" {
				from = "unknown"
			}
			p.write = append(p.write, journal.Entry{Kind: journal.KindRequest, ID: id, Source: v1alpha1.SourceConfig,
				Reason: configReason(from, desired), Config: desired, Time: f.now})
		}
	}

	// Raise this boot's requests, or clear them.
	for _, e := range thisBoot {
		// The reason is shown everywhere; one journaled with control
		// characters (by a writer other than request-reboot) is escaped.
		p.outstanding = append(p.outstanding, protocol.Request{ID: e.ID, Source: e.Source, Reason: v1alpha1.FitReason(e.Reason), Time: e.Time, Config: e.Config})
	}
	if len(p.outstanding) > 0 {
		v := protocol.Encode(protocol.Requested{BootID: f.bootID, Requests: p.outstanding})
		setAnnotation(p.annotations, ann, protocol.RebootRequested, &v)
	} else {
		setAnnotation(p.annotations, ann, protocol.RebootRequested, nil)
	}

	p.state = decideReboot(&p, f, ann, rebooting)
	// The daemon rewrites its own state whatever it read: an unreadable one
	// is replaced.
	old := protocol.DaemonState{}
	if f.node != nil {
		if st, _ := protocol.Read(f.node); st.Daemon != nil {
			old = *st.Daemon
		}
	}
	if old.Phase == p.state.Phase && old.BootID == p.state.BootID && !old.Since.IsZero() {
		p.state.Since = old.Since
	}
	if old.Phase != p.state.Phase || old.BootID != p.state.BootID || old.Message != p.state.Message {
		v := protocol.Encode(p.state)
		setAnnotation(p.annotations, ann, protocol.State, &v)
	}
	p.becameDegraded = p.state.Phase == protocol.DaemonDegraded && (old.Phase != protocol.DaemonDegraded || old.BootID != f.bootID)
	return p
}

// decideReboot decides whether to reboot now, and the daemon's state.
func decideReboot(p *plan, f facts, ann map[string]string, rebooting *journal.Entry) protocol.DaemonState {
	st := protocol.DaemonState{Phase: protocol.DaemonIdle, BootID: f.bootID, Since: f.now}
	approved := ann[protocol.RebootApproved]
	switch {
	case rebooting != nil:
		// Asked once in this boot; never again. The boot ID is the proof.
		deadline := rebooting.Time.Add(f.rebootTimeout)
		if !f.now.Before(deadline) {
			st.Phase = protocol.DaemonDegraded
			st.Message = fmt.Sprintf("asked to reboot at %s, and boot %s is still running %s later; not asking again",
				rebooting.Time.UTC().Format(time.RFC3339), f.bootID, f.rebootTimeout)
		} else {
			st.Phase, st.Message = protocol.DaemonRebooting, "reboot under way for requests "+fmt.Sprint(rebooting.Requests)
			p.recheckAt = deadline
		}
	case approved == f.bootID && len(p.outstanding) > 0:
		ids := make([]string, 0, len(p.outstanding))
		for _, r := range p.outstanding {
			ids = append(ids, r.ID)
		}
		slices.Sort(ids)
		p.reboot = &journal.Entry{Kind: journal.KindRebooting, Requests: ids, Time: f.now}
		p.recheckAt = f.now.Add(f.rebootTimeout)
		st.Phase, st.Message = protocol.DaemonRebooting, "reboot approved for this boot; rebooting"
	case len(p.outstanding) > 0:
		st.Phase, st.Message = protocol.DaemonRequested, fmt.Sprintf("%d requests waiting for approval", len(p.outstanding))
	}
	if approved != "" && approved != f.bootID {
		p.ignoredApproval = approved
	}
	return st
}

// setAnnotation records a change when the value differs from the node's.
func setAnnotation(changes map[string]*string, have map[string]string, key string, value *string) {
	old, ok := have[key]
	if value == nil && !ok || value != nil && ok && old == *value {
		return
	}
	changes[key] = value
}
