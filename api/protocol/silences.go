package protocol

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Silenced (operator): the Alertmanager silences kmaint holds for the
// node's maintenance, a SilenceRecord. The silences controller writes what
// it will make before it makes it (invariants 5 and 12), and the gate
// cordons an admitted node of a pool with silences only once the record
// is Settled for its admission.
const Silenced = Prefix + "silences"

// SilenceRecord is the value of Silenced.
type SilenceRecord struct {
	// BootID and Since name the maintenance the silences cover: its
	// admitted boot, and when it was admitted (Admission.Time). A drain
	// retried later is a new admission of the same boot, with its own.
	BootID string    `json:"bootID"`
	Since  time.Time `json:"since"`
	// Pool and PoolUID are the pool whose spec.silences they are.
	Pool    string    `json:"pool"`
	PoolUID types.UID `json:"poolUID,omitempty"`
	// Key is written in every silence's comment: an operator that stopped
	// between making a silence and recording its ID finds it by its key,
	// never by its author alone, which anyone may name.
	Key string `json:"key"`
	// Silences are those the maintenance holds, one per set and
	// Alertmanager; an entry without ID is one to make, or made and not
	// recorded yet.
	Silences []HeldSilence `json:"silences,omitempty"`
	// Unavailable says why silences could not be made, the last time
	// they were tried; nil when they could.
	Unavailable *SilencesUnavailable `json:"unavailable,omitempty"`
	// ReadyAt is when every silence was first made (or the pool went on
	// without them): the node's drain is timed from then.
	ReadyAt time.Time `json:"readyAt,omitzero"`
}

// HeldSilence is one silence of a maintenance.
type HeldSilence struct {
	// Set names the pool's silence set, Alertmanager the Alertmanager.
	Set          string `json:"set"`
	Alertmanager string `json:"alertmanager"`
	// ID is Alertmanager's; empty until made.
	ID string `json:"id,omitempty"`
	// EndsAt is the silence's end as last made or extended.
	EndsAt time.Time `json:"endsAt,omitzero"`
	// Removed: someone expired the silence while the node was in flight;
	// it is not made again for this maintenance.
	Removed bool `json:"removed,omitempty"`
}

// SilencesUnavailable says why a maintenance's silences could not be made.
type SilencesUnavailable struct {
	Message string    `json:"message"`
	Since   time.Time `json:"since"`
	// Proceed: the pool goes on without them (onUnreachable: Proceed).
	Proceed bool `json:"proceed,omitempty"`
}

// Held reports whether the silence is made and not removed.
func (h HeldSilence) Held() bool { return h.ID != "" && !h.Removed }

// Settled reports whether the node may be cordoned: every silence was made
// or removed by someone, or they could not be made and the pool proceeds.
func (r *SilenceRecord) Settled() bool {
	if r == nil {
		return false
	}
	if !r.ReadyAt.IsZero() {
		return true
	}
	return r.Unavailable != nil && r.Unavailable.Proceed
}

// SettledAt is when the record became Settled: its silences made, or the
// pool gone on without them; zero while it is not.
func (r *SilenceRecord) SettledAt() time.Time {
	switch {
	case r == nil:
		return time.Time{}
	case !r.ReadyAt.IsZero():
		return r.ReadyAt
	case r.Unavailable != nil && r.Unavailable.Proceed:
		return r.Unavailable.Since
	}
	return time.Time{}
}

// For reports whether the record covers the maintenance m.
func (r *SilenceRecord) For(m Maintenance) bool {
	return r != nil && r.BootID == m.BootID && (m.Since.IsZero() || r.Since.Equal(m.Since))
}

// Maintenance is what a node's silences cover: the maintenance of a boot,
// from its admission until the node is done or released.
type Maintenance struct {
	// BootID is the admitted boot; Since the admission's time, zero once
	// the reboot completed (the node settles, its admission gone).
	BootID string
	Since  time.Time
	// Pool and PoolUID are the pool that admitted the node.
	Pool    string
	PoolUID types.UID
}

// Silenceable returns the maintenance the node's silences cover now:
// admitted and not released, or back and settling without a failed check.
// A node that needs a person (Degraded: its drain failed, it did not come
// back, its daemon is missing, its annotations cannot be read) or that
// failed a health check is in none: its alerts are what tells the person.
func (s NodeState) Silenceable() (Maintenance, bool) {
	if _, degraded := s.degradedPosition(); degraded {
		return Maintenance{}, false
	}
	switch {
	case s.Admission != nil && !s.AdmissionVoid():
		return Maintenance{BootID: s.Admission.BootID, Since: s.Admission.Time, Pool: s.Admission.Pool, PoolUID: s.Admission.PoolUID}, true
	case s.Settle != nil && s.Settle.Failure == nil:
		return Maintenance{BootID: s.Settle.RebootedBoot, Pool: s.Settle.Pool, PoolUID: s.Settle.PoolUID}, true
	}
	return Maintenance{}, false
}

// SilencesReady reports whether the gate may cordon the admitted node of a
// pool with silences: its record for this admission is Settled.
func (s NodeState) SilencesReady() bool {
	return s.Admission != nil && s.Silences.For(Maintenance{BootID: s.Admission.BootID, Since: s.Admission.Time}) && s.Silences.Settled()
}

// RecordSilences writes the node's silence record.
func RecordSilences(r SilenceRecord) Transition {
	return func(n *corev1.Node) { n.Annotations[Silenced] = Encode(r) }
}

// ForgetSilences removes the node's silence record, once its silences
// ended.
func ForgetSilences() Transition {
	return func(n *corev1.Node) { delete(n.Annotations, Silenced) }
}

// AdmitUnsilenced admits the node as Admit does but leaves it uncordoned:
// its pool's silences are made first, and the drain stage cordons it once
// they are (SilencesReady).
func AdmitUnsilenced(a Admission) Transition {
	return func(n *corev1.Node) {
		n.Annotations[Admitted] = Encode(a)
		delete(n.Annotations, AdmissionHeld)
	}
}
