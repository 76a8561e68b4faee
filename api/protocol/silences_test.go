package protocol_test

import (
	"testing"
	"time"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/test/gen"
)

// A node's silences cover it from its admission to its settling, and not
// while it needs a person; the gate may cordon it once the record of this
// admission is settled.
func TestSilencesCoverTheMaintenanceOnly(t *testing.T) {
	t0 := time.Date(2026, 12, 8, 10, 0, 0, 0, time.UTC)
	admission := protocol.Admission{BootID: "boot-0", Time: t0, Pool: "p", PoolUID: "u", Requests: []string{"r1"}}
	requested := protocol.Requested{BootID: "boot-0", Requests: []protocol.Request{{ID: "r1", Source: "host", Time: t0}}}
	node := func(ts ...protocol.Transition) protocol.NodeState {
		n := gen.Node("n", gen.BootID("boot-0"))
		n.Annotations = map[string]string{protocol.RebootRequested: protocol.Encode(requested)}
		for _, tr := range ts {
			tr.Apply(n)
		}
		st, _ := protocol.Read(n)
		return st
	}
	if _, ok := node().Silenceable(); ok {
		t.Error("a node only asking is in no maintenance")
	}
	admitted := node(protocol.AdmitUnsilenced(admission))
	m, ok := admitted.Silenceable()
	if !ok || m.BootID != "boot-0" || !m.Since.Equal(t0) || m.Pool != "p" || m.PoolUID != "u" {
		t.Errorf("admitted: %+v %v", m, ok)
	}
	if admitted.Unschedulable || admitted.SilencesReady() {
		t.Error("admitted without its cordon, and not ready for it before its silences")
	}
	rec := protocol.SilenceRecord{BootID: "boot-0", Since: t0, Pool: "p", Key: "k", Silences: []protocol.HeldSilence{{Set: "s", Alertmanager: "am", ID: "id"}}}
	if node(protocol.AdmitUnsilenced(admission), protocol.RecordSilences(rec)).SilencesReady() {
		t.Error("a record whose silences were never all made lets the node be cordoned")
	}
	rec.ReadyAt = t0.Add(time.Second)
	if !node(protocol.AdmitUnsilenced(admission), protocol.RecordSilences(rec)).SilencesReady() {
		t.Error("every silence made: the node may be cordoned")
	}
	other := rec
	other.Since = t0.Add(-time.Hour)
	if node(protocol.AdmitUnsilenced(admission), protocol.RecordSilences(other)).SilencesReady() {
		t.Error("the record of an earlier admission of the same boot covers nothing")
	}
	held := rec
	held.ReadyAt, held.Unavailable = time.Time{}, &protocol.SilencesUnavailable{Message: "down", Since: t0}
	if node(protocol.AdmitUnsilenced(admission), protocol.RecordSilences(held)).SilencesReady() {
		t.Error("silences that could not be made hold the node")
	}
	held.Unavailable.Proceed = true
	if st := node(protocol.AdmitUnsilenced(admission), protocol.RecordSilences(held)); !st.SilencesReady() || !st.Silences.SettledAt().Equal(t0) {
		t.Error("a pool that proceeds lets it go, from when it gave up")
	}

	failed := node(protocol.AdmitUnsilenced(admission), protocol.Abandon(protocol.DrainFailure{BootID: "boot-0", Requests: []string{"r1"}, Time: t0}))
	if _, ok := failed.Silenceable(); ok {
		t.Error("a node whose drain failed needs a person: no silence")
	}
	settling := node(protocol.UpdateSettle(protocol.Settle{BootID: "boot-1", RebootedBoot: "boot-0", Pool: "p", PoolUID: "u", Since: t0}))
	if m, ok := settling.Silenceable(); !ok || m.BootID != "boot-0" || !m.Since.IsZero() {
		t.Errorf("settling: %+v %v", m, ok)
	}
	broken := node(protocol.UpdateSettle(protocol.Settle{BootID: "boot-1", RebootedBoot: "boot-0", Pool: "p", Since: t0,
		Failure: &protocol.HealthCheckFailure{Check: "c", Time: t0}}))
	if _, ok := broken.Silenceable(); ok {
		t.Error("a node that failed a health check: no silence")
	}
}
