package daemon

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/daemon/sentinel"
)

// facts is everything one sync decides from.
type facts struct {
	now    time.Time
	bootID string
	// entries are kmaint's root-written journal entries of every boot, in
	// journal order.
	entries []journal.Entry
	node    *corev1.Node
	// apiRequests are the NodeMaintenances the operator names on the node
	// (protocol.APIRequests); apiRequestsKnown is false when it names
	// none, or they cannot be read, and then no request that starts in the
	// API is journaled or cancelled.
	apiRequests      []protocol.APIRequest
	apiRequestsKnown bool
	// maintenances are those of apiRequests that the journal does not hold,
	// as read from the API server, less those found settled before.
	maintenances []v1alpha1.NodeMaintenance
	// rebootTimeout is how long after asking for a reboot the boot ID must
	// have changed before the daemon calls the reboot failed.
	rebootTimeout time.Duration
	// volatileJournal is true when the journal holds nothing of the node's
	// earlier boots (see volatileJournal).
	volatileJournal bool
	// sentinelEnabled is true when the daemon watches a reboot sentinel,
	// and sentinel is its last look, nil before the first.
	sentinelEnabled bool
	sentinel        *sentinel.Observation
}

// report is what the daemon tells a NodeMaintenance: when and in which boot
// its request was journaled.
type report struct {
	name   string
	bootID string
	time   time.Time
}

// write is an entry to journal. A request that starts in the API is first
// reported to its NodeMaintenance, in the boot it is about to be journaled
// in: the report survives a reboot that a volatile journal does not, so a
// request journaled just before a reboot is never journaled again after it.
type write struct {
	entry journal.Entry
	// reportFirst, when set, is written before the entry; the entry is not
	// journaled when it fails.
	reportFirst *report
}

// cancellation is what became of a journaled cancellation this sync.
type cancellation struct {
	id      string
	source  v1alpha1.Source
	refused bool
	// message says why, for a person.
	message string
}

// plan is what one sync does, in this order: report and journal, patch the
// node's annotations, and reboot.
type plan struct {
	// write are entries to journal.
	write []write
	// annotations maps each annotation to change to its new value; nil
	// removes it.
	annotations map[string]*string
	// lock makes the annotation patch conditional on the node being the one
	// read: set when it withdraws a cancelled request, so that an approval
	// written meanwhile (which covered the request) is never lost under it.
	lock bool
	// cancellations are this boot's cancellations and what became of them.
	cancellations []cancellation
	// reboot, when set, is the rebooting entry to journal right before the
	// reboot.
	reboot *journal.Entry
	// becameDegraded is true when this sync finds the approved reboot did
	// not happen.
	becameDegraded bool
	// sentinelEntered is true when the sentinel turned rebootLoop or error
	// in this sync: the Node gets a Warning event.
	sentinelEntered bool
	// ignoredApproval is an approval naming another boot, when there is one.
	ignoredApproval string
	// refusedApproval says why an approval of this boot is not acted on:
	// no admission of this boot covers it, so the gate did not write it
	// (invariant 10). Empty when there is none.
	refusedApproval string
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
	var st protocol.NodeState
	if f.node != nil {
		st, _ = protocol.Read(f.node)
	}
	j := indexJournal(f.entries, f.bootID)

	// Requests that start in the API: journal each accepted one once, and
	// withdraw those whose NodeMaintenance is gone.
	live := journalMaintenances(&p, f, j)
	cancelDeleted(&p, f, j, live)

	// Config: report what the last reboot applied, and request a reboot for
	// a config the pool wants and this boot has not asked for yet.
	current := ann[protocol.CurrentConfig]
	if applied := appliedConfig(j, st.Daemon, f.bootID); applied != "" && applied != current {
		setAnnotation(p.annotations, ann, protocol.CurrentConfig, &applied)
		current = applied
	}
	if desired := ann[protocol.DesiredConfig]; desired != "" && desired != current {
		id := v1alpha1.ConfigRequestID(f.bootID, desired)
		if _, ok := j.first[id]; !ok {
			from := current
			if from == "" {
				from = "unknown"
			}
			e := journal.Entry{Kind: journal.KindRequest, ID: id, Source: v1alpha1.SourceConfig,
				Reason: configReason(from, desired), Config: desired, Time: f.now}
			p.write = append(p.write, write{entry: e})
		}
	}

	// Raise this boot's requests, less those cancelled in time, or clear
	// them.
	var cancelled []string
	// A refused approval (no admission covers it) does not stop a
	// cancellation either.
	approved := ann[protocol.RebootApproved] == f.bootID && admits(st.Admission, f.bootID)
	onNode := st.Current()
	config := ""
	desired := ann[protocol.DesiredConfig]
	for _, e := range j.thisBoot {
		// A config request for a config the pool no longer wants is
		// withdrawn, unless its reboot is already approved or under way:
		// the pool moved on (its new config has a request of its own), back
		// to what the node runs (a roll back, which then reboots no node
		// that has not moved), or wants none (the node left its pool). It
		// stays withdrawn while that holds: a pool that wants it again
		// finds it standing.
		if e.Source == v1alpha1.SourceConfig && e.Config != "" && e.Config != desired &&
			!j.rebootingFor(e.ID) && !(approved && onNode != nil && onNode.Has(e.ID)) {
			cancelled = append(cancelled, e.ID)
			p.lock = p.lock || onNode != nil && onNode.Has(e.ID)
			continue
		}
		if c, ok := j.cancels[e.ID]; ok {
			out := judgeCancel(e, c, j, approved, onNode)
			p.cancellations = append(p.cancellations, out)
			if !out.refused {
				cancelled = append(cancelled, e.ID)
				// Withdrawing a request the node shows races the
				// gate's approval of it: the patch must not land on
				// an approval it did not see.
				p.lock = p.lock || onNode != nil && onNode.Has(e.ID)
				continue
			}
		}
		// The reason is shown everywhere; one journaled with control
		// characters (by a writer other than request-reboot) is escaped.
		p.outstanding = append(p.outstanding, protocol.Request{ID: e.ID, Source: e.Source, Reason: v1alpha1.FitReason(e.Reason), Time: e.Time, Config: e.Config})
		if e.Config != "" {
			config = e.Config
		}
	}
	if len(p.outstanding) > 0 || len(cancelled) > 0 {
		// Requests is a list, empty when all were cancelled, never null.
		v := protocol.Encode(protocol.Requested{BootID: f.bootID, Requests: append([]protocol.Request{}, p.outstanding...), Cancelled: cancelled})
		setAnnotation(p.annotations, ann, protocol.RebootRequested, &v)
	} else {
		setAnnotation(p.annotations, ann, protocol.RebootRequested, nil)
	}

	p.state = decideReboot(&p, f, ann, st.Admission, j.rebooting)
	p.state.Config, p.state.VolatileJournal = config, f.volatileJournal
	p.state.Sentinel = planSentinel(&p, f, j, st.Daemon)
	// The daemon rewrites its own state whatever it read: an unreadable one
	// is replaced.
	old := protocol.DaemonState{}
	if st.Daemon != nil {
		old = *st.Daemon
	}
	if old.Phase == p.state.Phase && old.BootID == p.state.BootID && !old.Since.IsZero() {
		p.state.Since = old.Since
	}
	if old.Phase != p.state.Phase || old.BootID != p.state.BootID || old.Message != p.state.Message ||
		old.Config != p.state.Config || old.VolatileJournal != p.state.VolatileJournal || !sameSentinel(old.Sentinel, p.state.Sentinel) {
		v := protocol.Encode(p.state)
		setAnnotation(p.annotations, ann, protocol.State, &v)
	}
	p.becameDegraded = p.state.Phase == protocol.DaemonDegraded && (old.Phase != protocol.DaemonDegraded || old.BootID != f.bootID)
	return p
}

// journalMaintenances plans the journaling of accepted NodeMaintenances
// that start in the API. It returns the ids of those the operator names on
// the node, which exist and are not being deleted; nil when it is not known
// which do.
func journalMaintenances(p *plan, f facts, j journalIndex) map[string]bool {
	if !f.apiRequestsKnown {
		return nil
	}
	live := map[string]bool{}
	for _, r := range f.apiRequests {
		live[string(r.UID)] = true
	}
	for _, nm := range f.maintenances {
		id := string(nm.UID)
		if !live[id] || nm.Spec.Source.RaisedOnNode() || nm.DeletionTimestamp != nil {
			continue
		}
		if _, ok := j.first[id]; ok {
			continue
		}
		e := journal.Entry{Kind: journal.KindRequest, ID: id, Source: nm.Spec.Source, Reason: nm.Spec.Reason, Time: f.now}
		switch boot := nm.Status.JournaledBootID; {
		case boot != "" && boot != f.bootID:
			// Journaled in an earlier boot whose journal is gone
			// (volatile): that boot's reboot satisfied it.
		case nm.Status.Phase.Done():
		case boot == f.bootID:
			// Reported, and the write that was to follow did not happen
			// (a failed write, a daemon killed in between).
			p.write = append(p.write, write{entry: e})
		case nm.Status.Phase == v1alpha1.PhasePending:
			p.write = append(p.write, write{entry: e, reportFirst: &report{name: nm.Name, bootID: f.bootID, time: f.now}})
		}
	}
	return live
}

// cancelDeleted plans a cancellation for each of this boot's requests that
// started in the API and whose NodeMaintenance the operator no longer names
// (live): deleted, or being deleted. It plans none when live is nil (not
// known), when a cancellation is journaled already, or when the reboot for
// the request was asked for. The planned cancellations count in this sync,
// as journaled ones do.
func cancelDeleted(p *plan, f facts, j journalIndex, live map[string]bool) {
	if live == nil {
		return
	}
	for _, e := range j.thisBoot {
		if e.Source.RaisedOnNode() || live[e.ID] || j.rebootingFor(e.ID) {
			continue
		}
		if _, ok := j.cancels[e.ID]; ok {
			continue
		}
		c := journal.Entry{Kind: journal.KindCancel, ID: e.ID, Reason: "its NodeMaintenance was deleted", Time: f.now, BootID: f.bootID}
		p.write = append(p.write, write{entry: c})
		j.cancels[e.ID] = c
	}
}

// judgeCancel says whether a cancellation withdraws its request: it does
// until the request's reboot is approved. Once the node shows the request
// and an approval of this boot, the approval covered it and the node was
// drained for it; once the daemon asked for the reboot, it is under way.
func judgeCancel(req, c journal.Entry, j journalIndex, approved bool, onNode *protocol.Requested) cancellation {
	out := cancellation{id: req.ID, source: req.Source}
	switch {
	case j.rebootingFor(req.ID):
		out.refused, out.message = true, fmt.Sprintf("cancellation of request %s refused: the reboot for it was already under way", req.ID)
	case approved && onNode != nil && onNode.Has(req.ID):
		out.refused, out.message = true, fmt.Sprintf("cancellation of request %s refused: its reboot was approved for boot %s before the cancellation reached the daemon", req.ID, req.BootID)
	default:
		out.message = fmt.Sprintf("request %s (%s) cancelled before its reboot was approved: %s", req.ID, req.Source, c.Reason)
	}
	return out
}

// appliedConfig is the config the node runs since its last reboot, when
// known: the one the daemon's state of the boot before says that boot's
// reboot applied; or else, for a state written before kmaint kept it
// there, the one the journal of earlier boots says.
func appliedConfig(j journalIndex, old *protocol.DaemonState, bootID string) string {
	if old != nil && old.BootID != "" && old.BootID != bootID && old.Config != "" {
		return old.Config
	}
	return j.applied
}

// admits reports whether the admission is of the boot: the gate writes an
// approval only beside the admission of the boot it approves.
func admits(admission *protocol.Admission, bootID string) bool {
	return admission != nil && admission.BootID == bootID
}

// decideReboot decides whether to reboot now, and the daemon's state.
func decideReboot(p *plan, f facts, ann map[string]string, admission *protocol.Admission, rebooting *journal.Entry) protocol.DaemonState {
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
	case approved == f.bootID && len(p.outstanding) > 0 && !admits(admission, f.bootID):
		// The gate approves only a boot it admitted, in the same patch
		// that keeps the admission: an approval alone was written by
		// someone else, who may patch Nodes but is not the gate. It skips
		// the budget, the windows, the drain: never acted on.
		p.refusedApproval = fmt.Sprintf("approval of boot %s refused: the node has no admission of this boot (the gate approves only a boot it admitted); not rebooting", f.bootID)
		if admission != nil {
			p.refusedApproval = fmt.Sprintf("approval of boot %s refused: the node's admission is of boot %s (the gate approves only a boot it admitted); not rebooting", f.bootID, admission.BootID)
		}
		st.Phase, st.Message = protocol.DaemonRequested, fmt.Sprintf("%d requests waiting for approval; %s", len(p.outstanding), p.refusedApproval)
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
