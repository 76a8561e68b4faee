package silences

import (
	"slices"
	"time"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Facts is what decides a node's silences in a pass (Decide).
type Facts struct {
	Now time.Time
	// Maintenance is what the node's silences cover now (see
	// protocol.NodeState.Silenceable); nil when they cover nothing and end.
	Maintenance *protocol.Maintenance
	// Record is the node's silence record; nil when none.
	Record *protocol.SilenceRecord
	// Sets are the names of the maintenance's pool's silence sets; SetsErr
	// says why they cannot be used (the pool is gone or was made anew, its
	// sets do not render): no silence is made then, and those made stay.
	Sets    []string
	SetsErr string
	// Proceed is the pool's onUnreachable: Proceed; Lifetime its
	// maxDuration.
	Proceed  bool
	Lifetime time.Duration
	// Alertmanagers are the names of the Alertmanagers configured.
	Alertmanagers []string
	// Margin is how far a silence's end lies ahead of the last pass that
	// saw its node in flight.
	Margin time.Duration
	// Key is a new key, for a record to start.
	Key string

	// What the calls need besides the decision: the node, the pool's
	// sets, and the requests the maintenance carries (its admission's).
	node     string
	spec     *v1alpha1.Silences
	requests []string
}

// Plan is a pass's decision: the record to write before any silence is
// made (Intent), the silences to make (or find by key), extend and expire,
// and whether the record goes once those expiries succeeded (Forget).
type Plan struct {
	// Record is the record the pass works on: the node's, or the one it
	// starts; nil when there is none and none is wanted.
	Record *protocol.SilenceRecord
	// Intent: Record holds silences to make that the node's record does
	// not: it is written first (invariant 12).
	Intent bool
	// Make, Extend and Expire are entries of Record by index.
	Make, Extend, Expire []int
	// EndsAt is the end of the silences made or extended.
	EndsAt time.Time
	// Forget: the record covers no maintenance now; it goes once every
	// silence of Expire ended.
	Forget bool
	// Unusable says why no silence is made (no Alertmanager configured,
	// the pool's sets cannot be used); empty when they may be.
	Unusable string
}

// Decide decides a node's silences: a pure function of its facts.
//
// A record of another maintenance, or of none, is ended first: each
// silence it holds is expired (found by key when its ID was never
// recorded), and the record forgotten; a silence whose end passed has
// ended and needs no call. A record for the maintenance is kept: an entry
// for each set and Alertmanager, the missing ones added and written before
// they are made, the ones no longer wanted expired, those near their end
// extended, as long as the maintenance's lifetime lasts.
func Decide(f Facts) Plan {
	rec := f.Record
	if f.Maintenance == nil || rec != nil && !rec.For(*f.Maintenance) {
		return endAll(f)
	}
	p := Plan{EndsAt: f.Now.Add(f.Margin)}
	var since time.Time
	if rec != nil {
		since = rec.Since
	} else {
		since = f.Maintenance.Since
	}
	if lifeEnd := since.Add(f.Lifetime); !since.IsZero() && lifeEnd.Before(p.EndsAt) {
		p.EndsAt = lifeEnd
	}
	wanted := f.wanted()
	switch {
	case f.SetsErr != "":
		p.Unusable = f.SetsErr
	case len(f.Sets) > 0 && len(f.Alertmanagers) == 0:
		p.Unusable = "the pool asks for silences but the operator has no Alertmanager (--alertmanager-url)"
	}
	if len(wanted) == 0 && p.Unusable == "" {
		// The pool asks for none (any longer): those held end.
		return endAll(f)
	}
	if rec == nil {
		m := f.Maintenance
		rec = &protocol.SilenceRecord{BootID: m.BootID, Since: m.Since, Pool: m.Pool, PoolUID: m.PoolUID, Key: f.Key}
	} else {
		rec = clone(rec)
	}
	p.Record = rec
	alive := f.Now.Before(p.EndsAt)
	for i, h := range rec.Silences {
		switch {
		case p.Unusable == "" && !slices.Contains(wanted, pair{h.Set, h.Alertmanager}):
			if mayLast(h, f.Now) {
				p.Expire = append(p.Expire, i)
			}
		case h.Removed || !alive:
		case h.ID == "" && p.Unusable == "":
			p.Make = append(p.Make, i)
		case h.EndsAt.Sub(f.Now) < f.Margin/2 && h.EndsAt.Before(p.EndsAt):
			p.Extend = append(p.Extend, i)
		}
	}
	if p.Unusable != "" || !alive {
		return p
	}
	for _, w := range wanted {
		if !slices.ContainsFunc(rec.Silences, w.is) {
			rec.Silences = append(rec.Silences, protocol.HeldSilence{Set: w.set, Alertmanager: w.alertmanager, EndsAt: p.EndsAt})
			p.Make = append(p.Make, len(rec.Silences)-1)
			p.Intent = true
		}
	}
	if f.Record == nil {
		p.Intent = true
	}
	return p
}

// endAll ends every silence of the node's record: the record covers no
// maintenance the node is in.
func endAll(f Facts) Plan {
	if f.Record == nil {
		return Plan{}
	}
	p := Plan{Record: clone(f.Record), Forget: true}
	for i, h := range p.Record.Silences {
		if mayLast(h, f.Now) {
			p.Expire = append(p.Expire, i)
		}
	}
	return p
}

// clockSkew is how far Alertmanager's clock may be behind the operator's:
// a silence is taken for ended at its end only that long after.
const clockSkew = time.Minute

// mayLast reports whether a silence may still be in force: made and not
// removed by someone (it is expired, whatever its end says: the two
// clocks may disagree), or, its ID never recorded, made perhaps and not
// surely past its end.
func mayLast(h protocol.HeldSilence, now time.Time) bool {
	switch {
	case h.Removed:
		return false
	case h.ID != "":
		return true
	}
	return now.Before(h.EndsAt.Add(clockSkew))
}

type pair struct{ set, alertmanager string }

func (w pair) is(h protocol.HeldSilence) bool {
	return h.Set == w.set && h.Alertmanager == w.alertmanager
}

// wanted is one silence per set and Alertmanager, in the sets' order.
func (f Facts) wanted() []pair {
	var out []pair
	for _, s := range f.Sets {
		for _, am := range f.Alertmanagers {
			out = append(out, pair{s, am})
		}
	}
	return out
}

func clone(r *protocol.SilenceRecord) *protocol.SilenceRecord {
	c := *r
	c.Silences = slices.Clone(r.Silences)
	if r.Unavailable != nil {
		u := *r.Unavailable
		c.Unavailable = &u
	}
	return &c
}

// setsOf returns the names of the pool's silence sets.
func setsOf(s *v1alpha1.Silences) []string {
	if s == nil {
		return nil
	}
	names := make([]string, 0, len(s.Sets))
	for _, set := range s.Sets {
		names = append(names, set.Name)
	}
	return names
}
