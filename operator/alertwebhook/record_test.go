package alertwebhook_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kmaint/kmaint/operator/alertwebhook"
)

// seen is an alert received for a node at a time.
type seen struct {
	node  string
	alert alertwebhook.Alert
	at    time.Time
}

// fire is alert fp firing since startsAt, received at, counting for ttl.
func fire(node, fp string, startsAt, at time.Time, ttl time.Duration) seen {
	return seen{node, alertwebhook.Alert{Fingerprint: fp, Firing: true, StartsAt: startsAt, Until: at.Add(ttl)}, at}
}

// end is alert fp of the episode since startsAt, ended, received at.
func end(node, fp string, startsAt, at time.Time) seen {
	return seen{node, alertwebhook.Alert{Fingerprint: fp, StartsAt: startsAt, EndsAt: at}, at}
}

func TestRecordEpisodes(t *testing.T) {
	h := time.Hour
	start := t0
	cases := map[string]struct {
		// seen are the alerts received, in order.
		seen []seen
		// lastReboot are the nodes' last completed reboots.
		lastReboot map[string]time.Time
		// at is when the record is read.
		at time.Time
		// wantFiring are the nodes with an alert firing at at, and since
		// when; wantNext when the first of them expires.
		wantFiring map[string]time.Time
		wantNext   time.Time
	}{
		"firing": {
			seen:       []seen{fire("n1", "a", start, start, 12*h)},
			at:         start.Add(h),
			wantFiring: map[string]time.Time{"n1": start}, wantNext: start.Add(12 * h),
		},
		"an alert that ended is not firing": {
			seen: []seen{end("n1", "a", start, start.Add(h))},
			at:   start.Add(h),
		},
		"resolved after firing": {
			seen: []seen{fire("n1", "a", start, start, 12*h), end("n1", "a", start, start.Add(h))},
			at:   start.Add(h),
		},
		"a firing record expires without news": {
			seen: []seen{fire("n1", "a", start, start, 12*h)},
			at:   start.Add(12 * h),
		},
		"a firing alert received again extends the record": {
			seen:       []seen{fire("n1", "a", start, start, 12*h), fire("n1", "a", start, start.Add(4*h), 12*h)},
			at:         start.Add(13 * h),
			wantFiring: map[string]time.Time{"n1": start}, wantNext: start.Add(16 * h),
		},
		"an older copy never shortens the record": {
			seen:       []seen{fire("n1", "a", start, start.Add(4*h), 12*h), fire("n1", "a", start, start, 12*h)},
			at:         start.Add(13 * h),
			wantFiring: map[string]time.Time{"n1": start}, wantNext: start.Add(16 * h),
		},
		"an expired episode received again fires again": {
			seen:       []seen{fire("n1", "a", start, start, h), fire("n1", "a", start, start.Add(2*h), h)},
			at:         start.Add(2 * h),
			wantFiring: map[string]time.Time{"n1": start}, wantNext: start.Add(3 * h),
		},
		"a replay of the firing of a resolved episode stays resolved": {
			seen: []seen{fire("n1", "a", start, start, 12*h), end("n1", "a", start, start.Add(h)), fire("n1", "a", start, start.Add(2*h), 12*h)},
			at:   start.Add(2 * h),
		},
		"a resolution received before the firing it ends": {
			seen: []seen{end("n1", "a", start, start.Add(h)), fire("n1", "a", start, start.Add(h), 12*h)},
			at:   start.Add(h),
		},
		"a new episode after a resolution fires": {
			seen:       []seen{fire("n1", "a", start, start, 12*h), end("n1", "a", start, start.Add(h)), fire("n1", "a", start.Add(2*h), start.Add(2*h), 12*h)},
			at:         start.Add(2 * h),
			wantFiring: map[string]time.Time{"n1": start.Add(2 * h)}, wantNext: start.Add(14 * h),
		},
		"an older episode received after a newer one is old news": {
			seen:       []seen{fire("n1", "a", start.Add(2*h), start.Add(2*h), 12*h), end("n1", "a", start, start.Add(3*h))},
			at:         start.Add(3 * h),
			wantFiring: map[string]time.Time{"n1": start.Add(2 * h)}, wantNext: start.Add(14 * h),
		},
		"a firing copy of an older episode is old news too": {
			seen: []seen{end("n1", "a", start.Add(2*h), start.Add(3*h)), fire("n1", "a", start, start.Add(3*h), 12*h)},
			at:   start.Add(3 * h),
		},
		"two alerts on a node, one resolved: still firing": {
			seen:       []seen{fire("n1", "a", start, start, 12*h), fire("n1", "b", start.Add(h), start.Add(h), 12*h), end("n1", "a", start, start.Add(2*h))},
			at:         start.Add(2 * h),
			wantFiring: map[string]time.Time{"n1": start.Add(h)}, wantNext: start.Add(13 * h),
		},
		"two alerts on a node fire since the earlier": {
			seen:       []seen{fire("n1", "b", start.Add(h), start.Add(h), 12*h), fire("n1", "a", start, start.Add(2*h), 12*h)},
			at:         start.Add(2 * h),
			wantFiring: map[string]time.Time{"n1": start}, wantNext: start.Add(13 * h),
		},
		"a reboot after the start answered the episode": {
			seen:       []seen{fire("n1", "a", start, start, 12*h), fire("n1", "a", start, start.Add(3*h), 12*h)},
			lastReboot: map[string]time.Time{"n1": start.Add(2 * h)},
			at:         start.Add(3 * h),
		},
		"a reboot before the start did not": {
			seen:       []seen{fire("n1", "a", start, start, 12*h)},
			lastReboot: map[string]time.Time{"n1": start.Add(-h)},
			at:         start.Add(h),
			wantFiring: map[string]time.Time{"n1": start}, wantNext: start.Add(12 * h),
		},
		"a new episode after the reboot fires": {
			seen:       []seen{fire("n1", "a", start, start, 12*h), fire("n1", "a", start.Add(3*h), start.Add(3*h), 12*h)},
			lastReboot: map[string]time.Time{"n1": start.Add(2 * h)},
			at:         start.Add(3 * h),
			wantFiring: map[string]time.Time{"n1": start.Add(3 * h)}, wantNext: start.Add(15 * h),
		},
		"another node's reboot answers nothing here": {
			seen:       []seen{fire("n1", "a", start, start, 12*h), fire("n2", "a", start, start, 12*h)},
			lastReboot: map[string]time.Time{"n2": start.Add(h)},
			at:         start.Add(2 * h),
			wantFiring: map[string]time.Time{"n1": start}, wantNext: start.Add(12 * h),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := alertwebhook.Record{}
			for _, s := range tc.seen {
				r.Observe(s.node, s.alert, s.at)
				r.Prune(s.at)
			}
			// What the sink writes is what the controller reads.
			raw, err := r.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			read, err := alertwebhook.ParseRecord(raw)
			if err != nil {
				t.Fatalf("ParseRecord(%s): %v", raw, err)
			}
			if !read.Equal(r) {
				t.Errorf("record read back %v, want %v", read, r)
			}
			firing, next := read.Firing(tc.at, tc.lastReboot)
			if tc.wantFiring == nil {
				tc.wantFiring = map[string]time.Time{}
			}
			if !maps.EqualFunc(firing, tc.wantFiring, time.Time.Equal) || !next.Equal(tc.wantNext) {
				t.Errorf("Firing = %v, next %s; want %v, next %s (record %s)", firing, next, tc.wantFiring, tc.wantNext, raw)
			}
		})
	}
}

// Ended episodes are remembered for EpisodeMemory, at most
// MaxEndedEpisodes of them, the oldest forgotten first; firing ones are
// kept whatever their number, and expired ones forgotten at once.
func TestRecordPrune(t *testing.T) {
	r := alertwebhook.Record{}
	for i := range alertwebhook.MaxEndedEpisodes + 10 {
		r.Observe(fmt.Sprintf("n%d", i), alertwebhook.Alert{Fingerprint: "a", StartsAt: t0}, t0.Add(time.Duration(i)*time.Second))
	}
	for i := range alertwebhook.MaxEndedEpisodes + 10 {
		r.Observe(fmt.Sprintf("f%d", i), alertwebhook.Alert{Fingerprint: "a", Firing: true, StartsAt: t0, Until: t0.Add(2 * alertwebhook.EpisodeMemory)}, t0)
	}
	r.Observe("expired", alertwebhook.Alert{Fingerprint: "a", Firing: true, StartsAt: t0, Until: t0.Add(time.Hour)}, t0)
	now := t0.Add(time.Hour)
	r.Prune(now)
	count := func(prefix string) int {
		n := 0
		for node := range r {
			if strings.HasPrefix(node, prefix) {
				n++
			}
		}
		return n
	}
	if got := count("n"); got != alertwebhook.MaxEndedEpisodes {
		t.Errorf("%d ended episodes kept, want %d", got, alertwebhook.MaxEndedEpisodes)
	}
	for i := range 10 {
		if _, ok := r[fmt.Sprintf("n%d", i)]; ok {
			t.Errorf("ended episode of n%d kept, one of the oldest", i)
		}
	}
	if got := count("f"); got != alertwebhook.MaxEndedEpisodes+10 {
		t.Errorf("%d firing episodes kept, want all %d", got, alertwebhook.MaxEndedEpisodes+10)
	}
	if _, ok := r["expired"]; ok {
		t.Error("an expired episode is kept")
	}
	raw, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// The record of a thousand nodes fits the API server's 256 KiB for all
	// of a policy's annotations, with room to spare.
	if len(raw) > 160<<10 {
		t.Errorf("record of %d nodes is %d bytes", len(r), len(raw))
	}

	r.Prune(t0.Add(alertwebhook.EpisodeMemory + time.Hour))
	if got := count("n"); got != 0 {
		t.Errorf("%d ended episodes kept after EpisodeMemory", got)
	}
	if got := count("f"); got != alertwebhook.MaxEndedEpisodes+10 {
		t.Errorf("%d firing episodes kept, want all", got)
	}
}

func TestParseRecord(t *testing.T) {
	cases := map[string]struct {
		raw string
		// wantErr is part of the error; empty for none.
		wantErr string
		// wantFiring are the nodes firing at t1.
		wantFiring []string
	}{
		"empty":   {raw: `{}`},
		"episode": {raw: `{"n1":[{"fingerprint":"a","startsAt":"2026-03-01T10:00:00Z","until":"2026-03-01T22:00:00Z"}]}`, wantFiring: []string{"n1"}},
		// Earlier versions wrote {node: startsAt}; such a record counts
		// for DefaultFiringTTL after the start, no longer.
		"earlier form":          {raw: `{"n1":"2026-03-01T10:00:00Z"}`, wantFiring: []string{"n1"}},
		"earlier form, expired": {raw: `{"n1":"2026-02-27T10:00:00Z"}`},
		"not JSON":              {raw: `{`, wantErr: "not JSON"},
		"wrong shape":           {raw: `{"n1":7}`, wantErr: "not JSON {node: [{fingerprint, startsAt, until, ended}]}"},
		"episode without start": {raw: `{"n1":[{"fingerprint":"a","until":"2026-03-01T22:00:00Z"}]}`, wantErr: `node "n1": episode 0 has no startsAt`},
		// Only a hand can write an expiry beyond MaxFiringTTL; it is not
		// believed.
		"until beyond the TTL": {raw: `{"n1":[{"fingerprint":"a","startsAt":"2026-03-01T10:00:00Z","until":"2099-01-01T00:00:00Z"}]}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := alertwebhook.ParseRecord(tc.raw)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("ParseRecord(%s) error %v, want one containing %q", tc.raw, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRecord(%s): %v", tc.raw, err)
			}
			firing, _ := r.Firing(t1, nil)
			got := slices.Sorted(maps.Keys(firing))
			if !slices.Equal(got, tc.wantFiring) {
				t.Errorf("firing %v, want %v", got, tc.wantFiring)
			}
		})
	}
}

// A flood of distinct alerts cannot fill the policy's record: a node keeps
// its latest MaxFiringPerNode firing episodes, and a record over
// MaxRecordBytes drops firing episodes, never the ended ones that keep a
// replayed notification from counting again.
func TestRecordFit(t *testing.T) {
	h := time.Hour
	r := alertwebhook.Record{}
	for i := range 20 {
		r.Observe("flooded", alertwebhook.Alert{Fingerprint: fmt.Sprintf("fp-%02d", i), Firing: true, StartsAt: t0.Add(time.Duration(i) * time.Minute), Until: t0.Add(12 * h)}, t0)
	}
	r.Observe("flooded", alertwebhook.Alert{Fingerprint: "done", StartsAt: t0, EndsAt: t0}, t0)
	if dropped := r.Fit(); dropped != 20-alertwebhook.MaxFiringPerNode {
		t.Fatalf("Fit dropped %d of 20 firing episodes; want all but %d", dropped, alertwebhook.MaxFiringPerNode)
	}
	var kept []string
	for _, e := range r["flooded"] {
		kept = append(kept, e.Fingerprint)
	}
	slices.Sort(kept)
	want := []string{"done", "fp-12", "fp-13", "fp-14", "fp-15", "fp-16", "fp-17", "fp-18", "fp-19"}
	if !slices.Equal(kept, want) {
		t.Fatalf("kept %v; want the ended one and the 8 latest firing", kept)
	}

	// Thousands of nodes, each with an alert of its own and one that
	// ended: the record fits, every ended episode stays, and the nodes
	// whose alert started first keep theirs.
	r = alertwebhook.Record{}
	for i := range 3000 {
		node := fmt.Sprintf("node-%04d-%s", i, strings.Repeat("x", 40))
		r.Observe(node, alertwebhook.Alert{Fingerprint: "firing", Firing: true, StartsAt: t0.Add(time.Duration(i) * time.Second), Until: t0.Add(12 * h)}, t0)
		if i < alertwebhook.MaxEndedEpisodes {
			r.Observe(node, alertwebhook.Alert{Fingerprint: "ended", StartsAt: t0, EndsAt: t0}, t0)
		}
	}
	r.Prune(t0)
	if r.Fit() == 0 {
		t.Fatal("a record of 3000 firing nodes was kept whole")
	}
	raw, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > alertwebhook.MaxRecordBytes {
		t.Fatalf("the record is %d bytes after Fit; want at most %d", len(raw), alertwebhook.MaxRecordBytes)
	}
	ended, firing := 0, map[string]bool{}
	for node, eps := range r {
		for _, e := range eps {
			if e.Ended.IsZero() {
				firing[node] = true
			} else {
				ended++
			}
		}
	}
	if ended != alertwebhook.MaxEndedEpisodes {
		t.Errorf("%d ended episodes kept; want all %d", ended, alertwebhook.MaxEndedEpisodes)
	}
	first := fmt.Sprintf("node-%04d-%s", 0, strings.Repeat("x", 40))
	last := fmt.Sprintf("node-%04d-%s", 2999, strings.Repeat("x", 40))
	if !firing[first] || firing[last] || len(firing) < 100 {
		t.Errorf("%d nodes keep a firing alert (the first %v, the last %v); want the earliest kept, the latest dropped", len(firing), firing[first], firing[last])
	}
	if _, err := alertwebhook.ParseRecord(raw); err != nil {
		t.Fatal(err)
	}
}
