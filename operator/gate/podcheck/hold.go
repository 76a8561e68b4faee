package podcheck

import (
	"fmt"
	"time"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Verdict is what a node its pods hold gets, under its pool's podOptOuts.
type Verdict struct {
	// Admit is true when the pods have held the node past maxHold and the
	// pool says to admit it.
	Admit bool
	// OptOut is what holds the node, said with how long when overdue.
	OptOut *protocol.OptOut
	// Overdue is true when the pods have held it past maxHold and the
	// pool says to report it.
	Overdue bool
	// Until is when the hold runs out, while it runs; zero otherwise.
	Until time.Time
}

// Hold applies the pool's podOptOuts to the pods' finding (a hold) on a
// node, given the node's note of its last hold. Pods that could not be
// listed are not an opt-out: they hold the node however long it takes.
func Hold(bounds *v1alpha1.PodOptOuts, held *protocol.Held, check Check, now time.Time) Verdict {
	if check.Unseen || held == nil || bounds == nil || bounds.MaxHold == nil {
		return Verdict{OptOut: check.OptOut}
	}
	if !bounds.Overdue(held.Since, now) {
		return Verdict{OptOut: check.OptOut, Until: held.Since.Add(bounds.MaxHold.Duration)}
	}
	if bounds.Admits() {
		return Verdict{Admit: true, OptOut: check.OptOut}
	}
	o := *check.OptOut
	o.Message += fmt.Sprintf("; held since %s, past the pool's podOptOuts.maxHold (%s), and kept held as its afterMaxHold (%s) says",
		held.Since.UTC().Format(time.RFC3339), bounds.MaxHold.Duration, v1alpha1.PodHoldReport)
	return Verdict{OptOut: &o, Overdue: true}
}
