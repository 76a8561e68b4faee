package pools

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

func TestQueueTime(t *testing.T) {
	now := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	recorded := now.Add(-time.Hour)
	host := func(id string, at time.Time) protocol.Request {
		return protocol.Request{ID: id, Source: v1alpha1.SourceHost, Time: at}
	}
	api := func(id string, at time.Time) protocol.Request {
		return protocol.Request{ID: id, Source: v1alpha1.SourceAPI, Time: at}
	}
	onNode := SettingsMap{"h": {Recorded: recorded, RaisedOnNode: true}}
	inAPI := SettingsMap{"uid": {Recorded: recorded}}
	epoch := time.Unix(0, 0).UTC()

	cases := map[string]struct {
		reqs     []protocol.Request
		settings SettingsMap
		want     time.Time
	}{
		"a host request, as journaled": {
			reqs: []protocol.Request{host("h", recorded.Add(-time.Minute))}, settings: onNode,
			want: recorded.Add(-time.Minute),
		},
		"a host request dated 1970 gains at most the lead on its record": {
			reqs: []protocol.Request{host("h", epoch)}, settings: onNode,
			want: recorded.Add(time.Second - v1alpha1.MaxRequestLead),
		},
		"a host request dated after kmaint recorded it counts from its record": {
			reqs: []protocol.Request{host("h", now.Add(365*24*time.Hour))}, settings: onNode,
			want: recorded.Add(time.Second),
		},
		// The record's time is cut to the second: a request made in that
		// second, after the stamp, is not put before it.
		"a host request made within the second its record was stamped": {
			reqs: []protocol.Request{host("h", recorded.Add(300*time.Millisecond))}, settings: onNode,
			want: recorded.Add(300 * time.Millisecond),
		},
		"a host request not recorded yet, dated 1970": {
			reqs: []protocol.Request{host("new", epoch)},
			want: now.Add(-v1alpha1.MaxRequestLead),
		},
		"a host request not recorded yet, dated in the future": {
			reqs: []protocol.Request{host("new", now.Add(time.Hour))},
			want: now,
		},
		"a request made in the API is as old as its NodeMaintenance, whatever it says": {
			reqs: []protocol.Request{api("uid", epoch)}, settings: inAPI,
			want: recorded,
		},
		"an API request of no NodeMaintenance of this node counts as made now": {
			reqs: []protocol.Request{api("borrowed", epoch)}, settings: inAPI,
			want: now,
		},
		"a record without a creation time is no record": {
			reqs: []protocol.Request{api("uid", epoch)}, settings: SettingsMap{"uid": {}},
			want: now,
		},
		"the earliest of a node's requests": {
			reqs: []protocol.Request{api("borrowed", epoch), host("h", recorded.Add(-2*time.Minute))}, settings: onNode,
			want: recorded.Add(-2 * time.Minute),
		},
		"no requests": {want: time.Time{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(QueueTime(tc.reqs, tc.settings, now)).To(Equal(tc.want))
			// What does not move may be kept: a day later it is the same.
			if !QueueTimeMoves(tc.reqs, tc.settings) {
				g.Expect(QueueTime(tc.reqs, tc.settings, now.Add(24*time.Hour))).To(Equal(tc.want), "a queue time said not to move moved")
			}
		})
	}
}

// A request no NodeMaintenance dates counts from a time bounded by now:
// its queue time moves, and the gate works it out again at each reconcile.
func TestQueueTimeMovesWithoutARecord(t *testing.T) {
	g := NewWithT(t)
	recorded := time.Date(2026, 12, 5, 5, 0, 0, 0, time.UTC)
	host := protocol.Request{ID: "h", Source: v1alpha1.SourceHost, Time: recorded}
	api := protocol.Request{ID: "uid", Source: v1alpha1.SourceAPI, Time: recorded}
	both := SettingsMap{"h": {Recorded: recorded, RaisedOnNode: true}, "uid": {Recorded: recorded}}
	g.Expect(QueueTimeMoves([]protocol.Request{host, api}, both)).To(BeFalse(), "every request dated")
	g.Expect(QueueTimeMoves([]protocol.Request{host}, nil)).To(BeTrue(), "a host request not recorded yet")
	g.Expect(QueueTimeMoves([]protocol.Request{host, api}, SettingsMap{"h": both["h"]})).To(BeTrue(), "one of two not recorded")
	g.Expect(QueueTimeMoves([]protocol.Request{api}, SettingsMap{"uid": {}})).To(BeTrue(), "a record without a creation time")
	g.Expect(QueueTimeMoves(nil, nil)).To(BeFalse(), "no requests")
}
