package alertwebhook

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Record is what a policy keeps of the alerts it received, by node: the
// latest episode of each alert, firing or ended. The webhook writes it to
// the policy (annotation kmaint.io/firing-alerts) on any replica and the
// policy controller reads it, so it lives as long as the policy, whatever
// restarts. It answers two questions: which nodes have an alert firing now
// (Firing), and whether an alert received again is news or a copy of an
// episode already over (Observe).
type Record map[string][]Episode

// Episode is one firing of one alert on one node, from its startsAt until
// it ends. Alertmanager sends the same startsAt for as long as the alert
// fires, and a new one when it fires again after a resolution, so an
// episode is named by the alert's fingerprint and its startsAt; a record
// holds the latest episode of each alert.
type Episode struct {
	// Fingerprint identifies the alert by its labels.
	Fingerprint string `json:"fingerprint"`
	// StartsAt is when the episode started.
	StartsAt time.Time `json:"startsAt"`
	// Until is when a firing episode stops counting unless the alert is
	// received again.
	Until time.Time `json:"until,omitzero"`
	// Ended is when the episode was seen to end: a resolved notification,
	// or a firing one whose endsAt had passed. Zero while it fires.
	Ended time.Time `json:"ended,omitzero"`
}

// Memory of ended episodes.
const (
	// EpisodeMemory is how long an ended episode is remembered, so that a
	// copy of its firing notification received later (a replay, a lagging
	// Alertmanager peer) is known as old news. A week covers Alertmanager's
	// own retries and peers many times over; anyone who could replay older
	// notifications holds the token, and could as well send a new alert.
	EpisodeMemory = 7 * 24 * time.Hour
	// MaxEndedEpisodes caps the ended episodes a record remembers, oldest
	// forgotten first, so that the record stays far below the API server's
	// limit on an object's annotations (256 KiB).
	MaxEndedEpisodes = 500
	// MaxFiringPerNode caps the firing episodes kept for one node: one
	// firing alert asks for the node's reboot as well as many do.
	MaxFiringPerNode = 8
	// MaxRecordBytes caps the encoded record. Firing episodes are dropped
	// to fit it, never ended ones: an ended episode forgotten would let a
	// replay of its firing notification ask for a reboot again, while a
	// firing one dropped only asks for none (Fit).
	MaxRecordBytes = 160 << 10
)

// ParseRecord reads a record. It also reads the form earlier versions
// wrote, {node: startsAt}: each such entry is a firing episode of an
// unknown alert that counts until DefaultFiringTTL after its start, since
// nothing says when it was last received.
func ParseRecord(raw string) (Record, error) {
	var r Record
	err := json.Unmarshal([]byte(raw), &r)
	if err == nil {
		return r, r.check()
	}
	var legacy map[string]time.Time
	if json.Unmarshal([]byte(raw), &legacy) != nil {
		return nil, fmt.Errorf("not JSON {node: [{fingerprint, startsAt, until, ended}]}: %w", err)
	}
	r = make(Record, len(legacy))
	for node, since := range legacy {
		r[node] = []Episode{{StartsAt: since, Until: since.Add(DefaultFiringTTL)}}
	}
	return r, nil
}

// check refuses a record with an episode that names no start: a hand-made
// or damaged record is reported rather than half believed.
func (r Record) check() error {
	for node, eps := range r {
		for i, e := range eps {
			if e.StartsAt.IsZero() {
				return fmt.Errorf("node %q: episode %d has no startsAt", node, i)
			}
		}
	}
	return nil
}

// Marshal encodes the record, nodes and episodes in a stable order.
func (r Record) Marshal() (string, error) {
	for _, eps := range r {
		slices.SortFunc(eps, func(a, b Episode) int { return cmp.Compare(a.Fingerprint, b.Fingerprint) })
	}
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encode alert record: %w", err)
	}
	return string(b), nil
}

// Clone returns a copy that Observe and Prune can change.
func (r Record) Clone() Record {
	c := make(Record, len(r))
	for node, eps := range r {
		c[node] = slices.Clone(eps)
	}
	return c
}

// Equal says whether two records hold the same episodes.
func (r Record) Equal(o Record) bool {
	return maps.EqualFunc(r, o, func(a, b []Episode) bool {
		return len(a) == len(b) && !slices.ContainsFunc(a, func(e Episode) bool {
			return !slices.ContainsFunc(b, e.equal)
		})
	})
}

func (e Episode) equal(o Episode) bool {
	return e.Fingerprint == o.Fingerprint && e.StartsAt.Equal(o.StartsAt) && e.Until.Equal(o.Until) && e.Ended.Equal(o.Ended)
}

// Observe records an alert received at now for a node. An alert with a
// later startsAt than the episode recorded starts a new episode; one with
// an earlier startsAt is old news and changes nothing. For the episode
// recorded: a firing alert extends it (never shortens it), an ended alert
// ends it, and once ended it stays ended, so a replayed or late firing
// notification of an episode that ended cannot make it fire again.
func (r Record) Observe(node string, a Alert, now time.Time) {
	eps := r[node]
	i := slices.IndexFunc(eps, func(e Episode) bool { return e.Fingerprint == a.Fingerprint })
	if i < 0 {
		r[node] = append(eps, newEpisode(a, now))
		return
	}
	e := &eps[i]
	switch {
	case a.StartsAt.Before(e.StartsAt):
	case a.StartsAt.After(e.StartsAt):
		*e = newEpisode(a, now)
	case !e.Ended.IsZero():
	case a.Firing:
		if a.Until.After(e.Until) {
			e.Until = a.Until
		}
	default:
		e.Ended, e.Until = now, time.Time{}
	}
}

func newEpisode(a Alert, now time.Time) Episode {
	e := Episode{Fingerprint: a.Fingerprint, StartsAt: a.StartsAt}
	if a.Firing {
		e.Until = a.Until
	} else {
		e.Ended = now
	}
	return e
}

// Prune forgets what no longer matters at now: firing episodes that
// expired (a copy received later is as good as new), ended episodes older
// than EpisodeMemory, and the oldest ended episodes beyond
// MaxEndedEpisodes.
func (r Record) Prune(now time.Time) {
	type ref struct {
		node  string
		ended time.Time
		fp    string
	}
	var ended []ref
	for node, eps := range r {
		eps = slices.DeleteFunc(eps, func(e Episode) bool {
			if e.Ended.IsZero() {
				return !now.Before(e.Until)
			}
			return e.Ended.Before(now.Add(-EpisodeMemory))
		})
		for _, e := range eps {
			if !e.Ended.IsZero() {
				ended = append(ended, ref{node, e.Ended, e.Fingerprint})
			}
		}
		r[node] = eps
	}
	if over := len(ended) - MaxEndedEpisodes; over > 0 {
		slices.SortFunc(ended, func(a, b ref) int { return a.ended.Compare(b.ended) })
		for _, f := range ended[:over] {
			r[f.node] = slices.DeleteFunc(r[f.node], func(e Episode) bool { return e.Fingerprint == f.fp && e.Ended.Equal(f.ended) })
		}
	}
	maps.DeleteFunc(r, func(_ string, eps []Episode) bool { return len(eps) == 0 })
}

// Fit bounds the firing episodes, after Prune: at most MaxFiringPerNode a
// node, those that started last kept (an older one is the likelier to have
// been answered by a reboot already), and then, while the encoded record is
// over MaxRecordBytes, one a node, and then none for the nodes whose alert
// started last. A flood of distinct alerts (a misused webhook token, or
// anyone who may post to Alertmanager) would otherwise fill the policy's
// annotations, and every later write, the true alerts' included, would
// fail. What is dropped asks for no reboot: Fit never makes one happen. It
// returns how many episodes it dropped.
func (r Record) Fit() (dropped int) {
	firingFirst := func(eps []Episode) {
		// Ended first, then firing, latest start first.
		slices.SortStableFunc(eps, func(a, b Episode) int {
			if a.Ended.IsZero() != b.Ended.IsZero() {
				if a.Ended.IsZero() {
					return 1
				}
				return -1
			}
			return b.StartsAt.Compare(a.StartsAt)
		})
	}
	keepFiring := func(perNode int) {
		for node, eps := range r {
			firingFirst(eps)
			firing := 0
			r[node] = slices.DeleteFunc(eps, func(e Episode) bool {
				if !e.Ended.IsZero() {
					return false
				}
				firing++
				if firing > perNode {
					dropped++
					return true
				}
				return false
			})
		}
	}
	keepFiring(MaxFiringPerNode)
	if r.size() <= MaxRecordBytes {
		return dropped
	}
	keepFiring(1)
	size := r.size()
	if size <= MaxRecordBytes {
		return dropped
	}
	// Still too big: drop the nodes' firing episodes, latest start first,
	// each node's encoded share off the size, until it fits.
	type firingNode struct {
		node  string
		start time.Time
	}
	var nodes []firingNode
	for node, eps := range r {
		for _, e := range eps {
			if e.Ended.IsZero() {
				nodes = append(nodes, firingNode{node, e.StartsAt})
			}
		}
	}
	slices.SortFunc(nodes, func(a, b firingNode) int {
		if c := b.start.Compare(a.start); c != 0 {
			return c
		}
		return cmp.Compare(b.node, a.node)
	})
	for _, n := range nodes {
		if size <= MaxRecordBytes {
			break
		}
		before := r[n.node]
		after := slices.DeleteFunc(slices.Clone(before), func(e Episode) bool { return e.Ended.IsZero() })
		dropped += len(before) - len(after)
		size -= encodedLen(before) - encodedLen(after)
		if len(after) == 0 {
			delete(r, n.node)
			size -= encodedLen(n.node) + len(`:[],`)
			continue
		}
		r[n.node] = after
	}
	return dropped
}

// size is the length of the encoded record.
func (r Record) size() int { return encodedLen(r) }

func encodedLen(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}

// Firing returns the nodes with an episode firing at now, each with the
// earliest start among them, and when the first of those episodes expires
// (zero for none). An episode that started before the node's last
// completed reboot (lastReboot) does not count: that reboot answered it,
// and one episode never asks for a second reboot. Nor does an episode
// whose expiry lies beyond MaxFiringTTL: no receiver writes that, so the
// record was changed by hand.
func (r Record) Firing(now time.Time, lastReboot map[string]time.Time) (since map[string]time.Time, next time.Time) {
	since = map[string]time.Time{}
	for node, eps := range r {
		for _, e := range eps {
			if !e.Ended.IsZero() || !now.Before(e.Until) || e.Until.After(now.Add(MaxFiringTTL)) || !e.StartsAt.After(lastReboot[node]) {
				continue
			}
			if s, ok := since[node]; !ok || e.StartsAt.Before(s) {
				since[node] = e.StartsAt
			}
			if next.IsZero() || e.Until.Before(next) {
				next = e.Until
			}
		}
	}
	return since, next
}
