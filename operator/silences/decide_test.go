package silences

import (
	"errors"
	"testing"
	"time"

	"github.com/kmaint/kmaint/api/protocol"
)

var (
	t0     = time.Date(2026, 12, 8, 10, 0, 0, 0, time.UTC)
	margin = 10 * time.Minute
	maint  = protocol.Maintenance{BootID: "b1", Since: t0, Pool: "p", PoolUID: "u"}
)

func facts(now time.Time, rec *protocol.SilenceRecord) Facts {
	m := maint
	return Facts{Now: now, Maintenance: &m, Record: rec, Sets: []string{"node", "instance"}, Alertmanagers: []string{"am1"},
		Margin: margin, Lifetime: 4 * time.Hour, Key: "k2"}
}

func made(f Facts, p Plan) protocol.SilenceRecord {
	o := Outcome{Errors: map[int]error{}}
	for _, i := range p.Make {
		p.Record.Silences[i].ID, p.Record.Silences[i].EndsAt = "id-"+p.Record.Silences[i].Set, p.EndsAt
		o.Made = append(o.Made, i)
	}
	for _, i := range p.Extend {
		p.Record.Silences[i].EndsAt = p.EndsAt
	}
	return *Settle(f, p, o).Record
}

// An admitted node's silences are recorded before they are made, made, and
// the record then says when they were all made: the gate's cue to cordon.
func TestANodeInFlightGetsOneSilencePerSetRecordedFirst(t *testing.T) {
	f := facts(t0, nil)
	p := Decide(f)
	if !p.Intent || len(p.Make) != 2 || p.Record.Key != "k2" || p.Record.BootID != "b1" || !p.Record.Since.Equal(t0) {
		t.Fatalf("first pass: %+v", p)
	}
	if p.Record.Settled() {
		t.Fatal("a record of silences not made yet lets the node be cordoned")
	}
	rec := made(f, p)
	if !rec.Settled() || !rec.ReadyAt.Equal(t0) || rec.Silences[0].ID != "id-node" || !rec.Silences[0].EndsAt.Equal(t0.Add(margin)) {
		t.Fatalf("after: %+v", rec)
	}

	// A pass soon after does nothing; one near the end extends both, not
	// past the maintenance's lifetime.
	if p := Decide(facts(t0.Add(time.Minute), &rec)); p.Intent || len(p.Make)+len(p.Extend)+len(p.Expire) != 0 {
		t.Fatalf("a pass with nothing due: %+v", p)
	}
	p = Decide(facts(t0.Add(6*time.Minute), &rec))
	if p.Intent || len(p.Extend) != 2 || !p.EndsAt.Equal(t0.Add(16*time.Minute)) {
		t.Fatalf("a pass near the end: %+v", p)
	}
	late := facts(t0.Add(4*time.Hour-5*time.Minute), &rec)
	late.Record.Silences[0].EndsAt, late.Record.Silences[1].EndsAt = late.Now.Add(time.Minute), late.Now.Add(time.Minute)
	if p := Decide(late); !p.EndsAt.Equal(t0.Add(4*time.Hour)) || len(p.Extend) != 2 {
		t.Fatalf("near the lifetime's end: %+v", p)
	}
	past := facts(t0.Add(4*time.Hour+time.Minute), &rec)
	if p := Decide(past); len(p.Extend)+len(p.Make) != 0 {
		t.Fatalf("past the lifetime nothing is extended: %+v", p)
	}
}

// An operator stopped after the record and before the IDs finds its
// silences by the key on the next pass (Make of entries without ID: the
// calls look for the key first), and writes no new intent.
func TestARestartBetweenTheRecordAndTheIDsMakesNoSecondRecord(t *testing.T) {
	f := facts(t0, nil)
	intent := *Decide(f).Record
	p := Decide(facts(t0.Add(time.Second), &intent))
	if p.Intent || len(p.Make) != 2 || p.Record.Key != intent.Key {
		t.Fatalf("the pass after a restart: %+v", p)
	}
}

// A silence someone expired is not made again; the node still counts as
// silenced enough to go on.
func TestASilenceRemovedBySomeoneIsNotMadeAgain(t *testing.T) {
	f := facts(t0, nil)
	rec := made(f, Decide(f))
	rec.Silences[0].Removed = true
	p := Decide(facts(t0.Add(6*time.Minute), &rec))
	if len(p.Make) != 0 || len(p.Extend) != 1 || p.Record.Silences[p.Extend[0]].Set != "instance" {
		t.Fatalf("%+v", p)
	}
}

// When the maintenance ends, every silence is expired (one never recorded
// by its key), and the record goes once they are; one whose expiry failed
// stays for the next pass; one past its end needs no call.
func TestTheSilencesEndWithTheMaintenance(t *testing.T) {
	f := facts(t0, nil)
	rec := made(f, Decide(f))
	rec.Silences[1].ID = ""
	done := facts(t0.Add(3*time.Minute), &rec)
	done.Maintenance = nil
	p := Decide(done)
	if !p.Forget || len(p.Expire) != 2 {
		t.Fatalf("%+v", p)
	}
	if w := Settle(done, p, Outcome{Expired: p.Expire}); !w.Forget {
		t.Fatalf("all expired: %+v", w)
	}
	w := Settle(done, Decide(done), Outcome{Expired: p.Expire[:1], Errors: map[int]error{p.Expire[1]: errors.New("down")}})
	if w.Forget || len(w.Record.Silences) != 1 {
		t.Fatalf("one failed: %+v", w)
	}
	// Past their end, one never recorded needs no call; one recorded is
	// expired all the same: Alertmanager's clock may be behind.
	after := facts(t0.Add(time.Hour), &rec)
	after.Maintenance = nil
	if p := Decide(after); len(p.Expire) != 1 || p.Record.Silences[p.Expire[0]].ID == "" || !p.Forget {
		t.Fatalf("past their end: %+v", p)
	}
	if w := Settle(after, Decide(after), Outcome{Errors: map[int]error{0: errors.New("down")}}); !w.Forget {
		t.Fatalf("past their end, a failed expiry keeps no record: %+v", w)
	}

	// A record of another admission (a drain retried) is ended first.
	other := facts(t0.Add(time.Minute), &rec)
	other.Maintenance = &protocol.Maintenance{BootID: "b1", Since: t0.Add(time.Minute), Pool: "p"}
	if p := Decide(other); !p.Forget {
		t.Fatalf("another admission's record: %+v", p)
	}
	// The settle stage (no admission time) is the same maintenance.
	settling := facts(t0.Add(time.Minute), &rec)
	settling.Maintenance = &protocol.Maintenance{BootID: "b1", Pool: "p"}
	if p := Decide(settling); p.Forget {
		t.Fatalf("settling: %+v", p)
	}
}

// Silences that cannot be made: the record says why and whether the pool
// proceeds; a pool that proceeds lets the node go on, one that holds not.
func TestSilencesThatCannotBeMade(t *testing.T) {
	for _, proceed := range []bool{false, true} {
		f := facts(t0, nil)
		f.Proceed = proceed
		p := Decide(f)
		w := Settle(f, p, Outcome{Errors: map[int]error{0: errors.New("connection refused"), 1: errors.New("connection refused")}})
		u := w.Record.Unavailable
		if u == nil || u.Proceed != proceed || w.Record.Settled() != proceed || !w.Record.ReadyAt.IsZero() {
			t.Fatalf("proceed %v: %+v", proceed, w.Record)
		}
	}
	none := facts(t0, nil)
	none.Alertmanagers = nil
	p := Decide(none)
	w := Settle(none, p, Outcome{})
	if len(p.Make) != 0 || w.Record == nil || w.Record.Unavailable == nil || w.Record.Settled() {
		t.Fatalf("no Alertmanager: %+v %+v", p, w.Record)
	}
	bad := facts(t0, nil)
	bad.SetsErr = "pool p's silences cannot be used"
	if w := Settle(bad, Decide(bad), Outcome{}); w.Record.Unavailable == nil || w.Record.Unavailable.Message != bad.SetsErr {
		t.Fatalf("bad sets: %+v", w.Record)
	}
}

// A pool that drops a set, or all of them, mid-flight: its silences end.
func TestSetsDroppedMidFlightEnd(t *testing.T) {
	f := facts(t0, nil)
	rec := made(f, Decide(f))
	fewer := facts(t0.Add(time.Minute), &rec)
	fewer.Sets = []string{"node"}
	p := Decide(fewer)
	if p.Forget || len(p.Expire) != 1 || p.Record.Silences[p.Expire[0]].Set != "instance" {
		t.Fatalf("one set dropped: %+v", p)
	}
	none := facts(t0.Add(time.Minute), &rec)
	none.Sets = nil
	if p := Decide(none); !p.Forget || len(p.Expire) != 2 {
		t.Fatalf("all dropped: %+v", p)
	}
	if p := Decide(facts(t0, nil)); p.Record == nil {
		t.Fatal("no record")
	}
	nothing := facts(t0, nil)
	nothing.Sets = nil
	if p := Decide(nothing); p.Record != nil {
		t.Fatalf("a pool without silences gets no record: %+v", p)
	}
}
