package protocol

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Settling (operator): the node is back from its approved reboot and keeps
// its slot in its pool's budget for the pool's settle time and health
// checks, a Settle. The gate writes it in the same patch that completes the
// reboot (removes the approval and the admission, uncordons); aftercare removes it
// when the node settled, or a person resumed its pool's halt. While it is
// there the node counts as unavailable and is not admitted again.
const Settling = Prefix + "settling"

// Settle is the value of Settling.
type Settle struct {
	// BootID is the boot the node came back with. A node that reboots
	// again while it settles settles its new boot from the start.
	BootID string `json:"bootID"`
	// RebootedBoot is the boot whose reboot was approved and completed:
	// its requests' NodeMaintenances stay Settling until the node settles.
	RebootedBoot string `json:"rebootedBoot"`
	// Requests are the ids of the requests the reboot carried out.
	Requests []string `json:"requests,omitempty"`
	// Pool names the pool whose slot the node holds, the one that admitted
	// it, and PoolUID that pool's object (Admission.PoolUID): the node is
	// that pool's until it settled (InFlightPool).
	Pool    string    `json:"pool,omitempty"`
	PoolUID types.UID `json:"poolUID,omitempty"`
	// Since is when the settle time began: the node back and Ready, or
	// Ready again after it went NotReady, or healthy again after a failed
	// check in a pool that resumes OnRecovery.
	Since time.Time `json:"since"`
	// Until is when the settle time ends: the node passes at the first
	// healthy evaluation of the checks at or after it. It is zero while
	// the node is not Ready: the settle time starts again when it is.
	Until time.Time `json:"until"`
	// Failure is the health check that failed; nil while none did.
	Failure *HealthCheckFailure `json:"failure,omitempty"`
}

// HealthCheckFailure is a health check that returned a bad result for a
// settling node.
type HealthCheckFailure struct {
	// Check names the check.
	Check string `json:"check"`
	// Value is the bad sample's value.
	Value string `json:"value,omitempty"`
	// Series is the bad series' labels, cut short.
	Series string `json:"series,omitempty"`
	// Time is when the check failed, by the operator's clock.
	Time time.Time `json:"time"`
	// Recovered is when the checks found the node healthy again, in a pool
	// that resumes OnRecovery: the node then settles anew, and its pool
	// stays halted until it passes (or fails again); nil until then.
	Recovered *time.Time `json:"recovered,omitempty"`
}

// Message says, for a person, what failed.
func (f HealthCheckFailure) Message() string {
	return fmt.Sprintf("health check %q returned %s (%s) at %s", f.Check, orUnknown(f.Value), f.Series, f.Time.UTC().Format(time.RFC3339))
}

// SettlingNow reports whether the node holds its slot after its reboot, in
// whatever boot: aftercare clears the record, nothing else.
func (s NodeState) SettlingNow() bool { return s.Settle != nil }

// HealthCheckFailed reports whether the node failed a health check after its
// reboot and waits for its pool to be resumed or the check to recover.
func (s NodeState) HealthCheckFailed() bool { return s.Settle != nil && s.Settle.Failure != nil }

// SettleUnreadable reports whether the node has a settle record that cannot
// be read: it keeps its slot and never passes, until a person fixes or
// removes the annotation.
func (s NodeState) SettleUnreadable() bool { return s.settleAnnotated && s.Settle == nil }

// SettleOnCompletion is the record that the patch completing the node's
// reboot writes in a guarded pool (one with a settle time or health
// checks): the node is back in service and keeps its slot while it
// settles. Nil for a pool without either. It is written with the completion,
// never after it, so that no crash can free the slot of a node that has not
// settled.
func SettleOnCompletion(pool *v1alpha1.MaintenancePool, s NodeState, now time.Time) *Settle {
	if !pool.Spec.Guarded() {
		return nil
	}
	rec := &Settle{BootID: s.BootID, RebootedBoot: s.Approved, Pool: pool.Name, PoolUID: pool.UID, Since: now, Until: now.Add(pool.Spec.Settle())}
	if s.Admission != nil {
		rec.Requests = s.Admission.Requests
	}
	return rec
}
