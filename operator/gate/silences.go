package gate

import (
	"fmt"
	"strings"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator/gate/view"
)

// A pool with silences admits a node without its cordon
// (protocol.AdmitUnsilenced); the silences controller makes the node's
// silences and records them, and the drain stage cordons it once its
// record is settled (silencesWait). While an admitted node waits for
// silences that cannot be made and its pool holds for them, the pool
// admits nothing new (policies.SilencesUnavailable).

// silenced reports whether the pool's nodes get silences.
func silenced(pool *v1alpha1.MaintenancePool) bool {
	return pool.Spec.Silences != nil && len(pool.Spec.Silences.Sets) > 0
}

// silencesWait is why the admitted node waits for its silences before
// its cordon and drain: they are not made (or given up on, with
// onUnreachable: Proceed); empty when nothing keeps it. A node cordoned by
// someone else waits too: its drain is what pages. A pool whose silences
// are added while its node drains pauses the drain until they are made.
func silencesWait(pool *v1alpha1.MaintenancePool, v *view.Node) (msg string, unavailable bool) {
	if !silenced(pool) || v.SilencesReady() {
		return "", false
	}
	rec := v.Silences
	if rec.For(admitted(v)) && rec.Unavailable != nil {
		return "its silences cannot be made: " + rec.Unavailable.Message, true
	}
	return "waiting for its Alertmanager silences before its cordon", false
}

// silencesUnavailable names the pool's admitted nodes that wait,
// uncordoned, for silences that cannot be made, and why, when the pool
// holds for them (onUnreachable: Hold); empty when none does.
func (st *poolState) silencesUnavailable() string {
	if !silenced(st.pool) || st.pool.Spec.Silences.Proceeds() {
		return ""
	}
	var waiting []string
	for _, v := range st.views {
		if v.Admission == nil {
			continue
		}
		if rec := v.Silences; rec.For(admitted(v)) && rec.Unavailable != nil && !rec.Settled() {
			waiting = append(waiting, fmt.Sprintf("%s (%s)", v.Node.Name, rec.Unavailable.Message))
		}
	}
	if len(waiting) == 0 {
		return ""
	}
	return "the silences of admitted node " + strings.Join(waiting, ", ") + " cannot be made"
}

func admitted(v *view.Node) protocol.Maintenance {
	return protocol.Maintenance{BootID: v.Admission.BootID, Since: v.Admission.Time}
}
