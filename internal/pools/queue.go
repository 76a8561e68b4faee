package pools

import (
	"time"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// QueueTime is when a node's requests count as made, for the order in which
// the waiting nodes of a pool are admitted: the earliest of its requests'
// times, each bounded by what kmaint itself saw (settings are the node's
// own, by request id, as Settings gives them).
//
//   - A request with a NodeMaintenance of this node made in the API (a
//     person's, a policy's, an alert's) is as old as that object, whose
//     creation the API server stamped.
//   - A request started on the node (host, config, sentinel) carries the
//     time its daemon says it was journaled, believed only between
//     v1alpha1.MaxRequestLead before its NodeMaintenance was recorded and
//     that moment (the end of the second the API server stamped); before
//     it is recorded, between MaxRequestLead before now and now.
//   - A request that says it comes from the API but has no NodeMaintenance
//     of this node (one withdrawn a moment ago, or another node's id,
//     borrowed) counts as made now.
func QueueTime(reqs []protocol.Request, settings SettingsOf, now time.Time) time.Time {
	var earliest time.Time
	for _, req := range reqs {
		t := requestQueueTime(req, settings, now)
		if earliest.IsZero() || t.Before(earliest) {
			earliest = t
		}
	}
	return earliest
}

func requestQueueTime(req protocol.Request, settings SettingsOf, now time.Time) time.Time {
	s, recorded := lookup(settings, req.ID)
	// The API server stamps every object it creates; a zero time is no
	// record kmaint can date.
	recorded = recorded && !s.Recorded.IsZero()
	switch {
	case recorded && !s.RaisedOnNode:
		return s.Recorded
	case recorded:
		// The API server stamps creation to the second, cut down: the
		// record was made before the end of that second.
		made := s.Recorded.Add(time.Second)
		return within(req.Time, made.Add(-v1alpha1.MaxRequestLead), made)
	case req.Source.RaisedOnNode():
		return within(req.Time, now.Add(-v1alpha1.MaxRequestLead), now)
	}
	return now
}

// within is t moved into [lo, hi].
func within(t, lo, hi time.Time) time.Time {
	switch {
	case t.Before(lo):
		return lo
	case t.After(hi):
		return hi
	}
	return t
}

// QueueTimeMoves reports whether QueueTime of reqs changes with now: when
// one of them has no NodeMaintenance that dates it, it counts from a time
// bounded by now. Otherwise QueueTime is the same at every moment, and
// may be kept until the requests or their NodeMaintenances change.
func QueueTimeMoves(reqs []protocol.Request, settings SettingsOf) bool {
	for _, req := range reqs {
		if s, ok := lookup(settings, req.ID); !ok || s.Recorded.IsZero() {
			return true
		}
	}
	return false
}
