package plan

import (
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/operator/gate/view"
	"github.com/kmaint/kmaint/test/gen"
)

// t0 is when the first request of every Admissions case was made.
var t0 = time.Date(2025, 3, 1, 2, 0, 0, 0, time.UTC)

// req is a host request made d after t0.
func req(id string, d time.Duration) protocol.Request {
	return gen.Req(id, v1alpha1.SourceHost, t0.Add(d))
}

// queuedAsAsked is v queued by the times its requests carry, as when
// kmaint recorded each the moment it was made.
func queuedAsAsked(v *view.Node) *view.Node {
	cur := v.Current()
	if cur == nil {
		return v
	}
	settings := pools.SettingsMap{}
	for _, r := range cur.Requests {
		settings[r.ID] = pools.RequestSettings{Recorded: r.Time, RaisedOnNode: true}
	}
	v.QueuedAt = pools.QueueTime(cur.Requests, settings, t0.Add(time.Hour))
	return v
}

func TestAdmissions(t *testing.T) {
	cases := map[string]struct {
		nodes []*corev1.Node
		// otherPools names, per node, other pools that select it too.
		otherPools map[string][]string
		// inflight lists nodes the gate admitted that its cache does not
		// show as admitted yet.
		inflight []string
		// counted counts the nodes that count against the budget besides
		// the views: the pool's quiet members rebooting.
		counted        int
		maxUnavailable int
		paused         bool
		// closed lists nodes none of whose requests' windows are open, with
		// when the first opens (zero: unknown).
		closed map[string]time.Time
		// held is a blocking query holding new admissions.
		held bool
		// optedOut lists nodes an opt-out holds.
		optedOut []string

		// wantAdmit are the nodes admitted now, in order.
		wantAdmit []string
		// wantWaiting are the nodes that asked and were not admitted, in
		// order; nodes that are not asking appear in neither list.
		wantWaiting []string
		// wantUnavailable is how many nodes count against the budget
		// before anything is admitted.
		wantUnavailable int
		// wantOutsideWindow counts waiting nodes held back by windows.
		wantOutsideWindow int
		// wantNextOpening is the earliest opening among them.
		wantNextOpening time.Time
		// wantHeld counts nodes a blocking query kept from admission.
		wantHeld int
		// wantOptedOut counts waiting nodes an opt-out holds.
		wantOptedOut int
	}{
		"an opted-out node gives its turn to the next, at no cost": {
			nodes: []*corev1.Node{
				gen.Node("first", gen.Requested("boot-0", req("f1", 0))),
				gen.Node("second", gen.Requested("boot-0", req("s1", time.Minute))),
				gen.Node("third", gen.Requested("boot-0", req("t1", 2*time.Minute))),
			},
			optedOut:       []string{"first"},
			maxUnavailable: 1,
			wantAdmit:      []string{"second"},
			wantWaiting:    []string{"first", "third"},
			wantOptedOut:   1,
		},
		"opted-out nodes wait in a paused pool and outside windows alike": {
			nodes: []*corev1.Node{
				gen.Node("held", gen.Requested("boot-0", req("h1", 0))),
				gen.Node("shut", gen.Requested("boot-0", req("s1", time.Minute))),
			},
			optedOut:          []string{"held"},
			closed:            map[string]time.Time{"shut": t0.Add(time.Hour), "held": t0.Add(time.Minute)},
			maxUnavailable:    2,
			wantWaiting:       []string{"held", "shut"},
			wantOutsideWindow: 1,
			wantNextOpening:   t0.Add(time.Hour),
			wantOptedOut:      1,
		},
		"in the order asked, then by name": {
			nodes: []*corev1.Node{
				gen.Node("d", gen.Requested("boot-0", req("d1", 2*time.Minute))),
				gen.Node("b", gen.Requested("boot-0", req("b1", time.Minute))),
				gen.Node("a", gen.Requested("boot-0", req("a1", time.Minute))),
				gen.Node("c", gen.Requested("boot-0", req("c1", 0))),
			},
			maxUnavailable: 4,
			wantAdmit:      []string{"c", "a", "b", "d"},
		},
		"a node's oldest request sets its place": {
			nodes: []*corev1.Node{
				gen.Node("a", gen.Requested("boot-0", req("a1", time.Minute))),
				gen.Node("b", gen.Requested("boot-0", req("b2", 2*time.Minute), req("b1", 0))),
			},
			maxUnavailable: 1,
			wantAdmit:      []string{"b"},
			wantWaiting:    []string{"a"},
		},
		"budget limits admissions": {
			nodes: []*corev1.Node{
				gen.Node("a", gen.Requested("boot-0", req("a1", 4*time.Minute))),
				gen.Node("b", gen.Requested("boot-0", req("b1", 3*time.Minute))),
				gen.Node("c", gen.Requested("boot-0", req("c1", 2*time.Minute))),
				gen.Node("d", gen.Requested("boot-0", req("d1", time.Minute))),
				gen.Node("e", gen.Requested("boot-0", req("e1", 0))),
			},
			maxUnavailable: 2,
			wantAdmit:      []string{"e", "d"},
			wantWaiting:    []string{"c", "b", "a"},
		},
		"unavailable nodes use up the budget": {
			nodes: []*corev1.Node{
				gen.Node("down", gen.NotReady()),
				gen.Node("draining", gen.Admitted("boot-0", t0, "x1"), gen.Requested("boot-0", req("x1", 0))),
				gen.Node("approved", gen.Approved("boot-0")),
				gen.Node("a", gen.Requested("boot-0", req("a1", 0))),
				gen.Node("b", gen.Requested("boot-0", req("b1", time.Minute))),
			},
			maxUnavailable:  4,
			wantAdmit:       []string{"a"},
			wantWaiting:     []string{"b"},
			wantUnavailable: 3,
		},
		"budget already exceeded admits no one who costs": {
			nodes: []*corev1.Node{
				gen.Node("down1", gen.NotReady()),
				gen.Node("down2", gen.NotReady()),
				gen.Node("a", gen.Requested("boot-0", req("a1", 0))),
			},
			maxUnavailable:  1,
			wantWaiting:     []string{"a"},
			wantUnavailable: 2,
		},
		"a quiet member rebooting holds its slot": {
			nodes:           []*corev1.Node{gen.Node("a", gen.Requested("boot-0", req("a1", 0)))},
			counted:         1,
			maxUnavailable:  1,
			wantWaiting:     []string{"a"},
			wantUnavailable: 1,
		},
		"a node cordoned by a person costs nothing": {
			nodes: []*corev1.Node{
				gen.Node("first", gen.Requested("boot-0", req("f1", 0))),
				gen.Node("cordoned", gen.Unschedulable(), gen.Requested("boot-0", req("c1", time.Minute))),
			},
			maxUnavailable:  1,
			wantAdmit:       []string{"cordoned"},
			wantWaiting:     []string{"first"},
			wantUnavailable: 1,
		},
		"a not Ready node costs nothing": {
			nodes: []*corev1.Node{
				gen.Node("busy", gen.NotReady()),
				gen.Node("down", gen.NotReady(), gen.Requested("boot-0", req("d1", time.Minute))),
				gen.Node("up", gen.Requested("boot-0", req("u1", 0))),
			},
			maxUnavailable:  2,
			wantAdmit:       []string{"down"},
			wantWaiting:     []string{"up"},
			wantUnavailable: 2,
		},
		"paused admits none": {
			nodes: []*corev1.Node{
				gen.Node("a", gen.Requested("boot-0", req("a1", time.Minute))),
				gen.Node("b", gen.Requested("boot-0", req("b1", 0))),
				gen.Node("cordoned", gen.Unschedulable(), gen.Requested("boot-0", req("c1", 2*time.Minute))),
			},
			maxUnavailable:  3,
			paused:          true,
			wantWaiting:     []string{"b", "a", "cordoned"},
			wantUnavailable: 1,
		},
		"maxUnavailable 0 admits none, not even a free one": {
			nodes: []*corev1.Node{
				gen.Node("a", gen.Requested("boot-0", req("a1", 0))),
				gen.Node("cordoned", gen.Unschedulable(), gen.Requested("boot-0", req("c1", time.Minute))),
			},
			maxUnavailable:  0,
			wantWaiting:     []string{"a", "cordoned"},
			wantUnavailable: 1,
		},
		"requests of an earlier boot are not waiting": {
			nodes: []*corev1.Node{
				gen.Node("rebooted", gen.BootID("boot-1"), gen.Requested("boot-0", req("r1", 0))),
				gen.Node("a", gen.Requested("boot-0", req("a1", time.Minute))),
			},
			maxUnavailable: 1,
			wantAdmit:      []string{"a"},
		},
		"an empty request list is not waiting": {
			nodes:          []*corev1.Node{gen.Node("a", gen.Requested("boot-0"))},
			maxUnavailable: 1,
		},
		"a node another pool selects too is not admitted": {
			nodes: []*corev1.Node{
				gen.Node("shared", gen.Requested("boot-0", req("s1", 0))),
				gen.Node("a", gen.Requested("boot-0", req("a1", time.Minute))),
			},
			otherPools:     map[string][]string{"shared": {"gpu"}},
			maxUnavailable: 1,
			wantAdmit:      []string{"a"},
		},
		"a failed drain that covers every request is not admitted again": {
			nodes: []*corev1.Node{
				gen.Node("failed", gen.Requested("boot-0", req("f1", 0), req("f2", time.Second)), gen.DrainFailed("boot-0", t0, "pod x blocked the drain", "f1", "f2")),
				gen.Node("a", gen.Requested("boot-0", req("a1", time.Minute))),
			},
			maxUnavailable: 1,
			wantAdmit:      []string{"a"},
		},
		"a new request after a failed drain is admitted": {
			nodes: []*corev1.Node{
				gen.Node("failed", gen.Requested("boot-0", req("f1", 0), req("f2", time.Hour)), gen.DrainFailed("boot-0", t0, "pod x blocked the drain", "f1")),
			},
			maxUnavailable: 1,
			wantAdmit:      []string{"failed"},
		},
		"a failed drain of an earlier boot covers nothing": {
			nodes: []*corev1.Node{
				gen.Node("failed", gen.Requested("boot-0", req("f1", 0)), gen.DrainFailed("boot-old", t0, "pod x blocked the drain", "f1")),
			},
			maxUnavailable: 1,
			wantAdmit:      []string{"failed"},
		},
		"a malformed reboot-requested never admits": {
			nodes: []*corev1.Node{
				gen.Node("garbled", gen.Annotations(protocol.RebootRequested, `{"bootID":"boot-0","requests":[{"id":`)),
				gen.Node("wrongType", gen.Annotations(protocol.RebootRequested, `["boot-0"]`)),
			},
			maxUnavailable: 2,
		},
		"any malformed annotation keeps a requesting node out": {
			nodes: []*corev1.Node{
				gen.Node("badState", gen.Requested("boot-0", req("b1", 0)), gen.Annotations(protocol.State, "idle")),
				gen.Node("badFailure", gen.Requested("boot-0", req("b2", 0)), gen.Annotations(protocol.DrainFailed, "{")),
			},
			maxUnavailable: 2,
		},
		"an unreadable admission still holds its slot": {
			nodes: []*corev1.Node{
				gen.Node("garbled", gen.Annotations(protocol.Admitted, "not json")),
				gen.Node("a", gen.Requested("boot-0", req("a1", 0))),
			},
			maxUnavailable:  1,
			wantWaiting:     []string{"a"},
			wantUnavailable: 1,
		},
		"an admission in flight holds its slot and is not admitted twice": {
			nodes: []*corev1.Node{
				gen.Node("inflight", gen.Requested("boot-0", req("i1", 0))),
				gen.Node("a", gen.Requested("boot-0", req("a1", time.Minute))),
			},
			inflight:        []string{"inflight"},
			maxUnavailable:  1,
			wantWaiting:     []string{"a"},
			wantUnavailable: 1,
		},
		"a node outside its windows waits while the next one is admitted": {
			nodes: []*corev1.Node{
				gen.Node("policy", gen.Requested("boot-0", req("p1", 0))),
				gen.Node("host", gen.Requested("boot-0", req("h1", time.Minute))),
			},
			closed:            map[string]time.Time{"policy": t0.Add(3 * time.Hour)},
			maxUnavailable:    1,
			wantAdmit:         []string{"host"},
			wantWaiting:       []string{"policy"},
			wantOutsideWindow: 1,
			wantNextOpening:   t0.Add(3 * time.Hour),
		},
		"the earliest opening among the nodes outside their windows": {
			nodes: []*corev1.Node{
				gen.Node("a", gen.Requested("boot-0", req("a1", 0))),
				gen.Node("b", gen.Requested("boot-0", req("b1", time.Minute))),
				gen.Node("c", gen.Requested("boot-0", req("c1", 2*time.Minute))),
			},
			closed:            map[string]time.Time{"a": t0.Add(5 * time.Hour), "b": t0.Add(2 * time.Hour), "c": {}},
			maxUnavailable:    3,
			wantWaiting:       []string{"a", "b", "c"},
			wantOutsideWindow: 3,
			wantNextOpening:   t0.Add(2 * time.Hour),
		},
		"paused counts no one as outside windows": {
			nodes:          []*corev1.Node{gen.Node("a", gen.Requested("boot-0", req("a1", 0)))},
			closed:         map[string]time.Time{"a": t0.Add(time.Hour)},
			maxUnavailable: 1,
			paused:         true,
			wantWaiting:    []string{"a"},
		},
		"a blocking query admits no one and counts those it kept": {
			nodes: []*corev1.Node{
				gen.Node("a", gen.Requested("boot-0", req("a1", 0))),
				gen.Node("b", gen.Requested("boot-0", req("b1", time.Minute))),
				gen.Node("c", gen.Requested("boot-0", req("c1", 2*time.Minute))),
				gen.Node("outside", gen.Requested("boot-0", req("o1", 3*time.Minute))),
			},
			closed:            map[string]time.Time{"outside": t0.Add(time.Hour)},
			maxUnavailable:    2,
			held:              true,
			wantWaiting:       []string{"a", "b", "c", "outside"},
			wantOutsideWindow: 1,
			wantNextOpening:   t0.Add(time.Hour),
			wantHeld:          2,
		},
		"a blocking query keeps even a node that costs nothing": {
			nodes: []*corev1.Node{
				gen.Node("cordoned", gen.Unschedulable(), gen.Requested("boot-0", req("c1", 0))),
			},
			maxUnavailable:  1,
			held:            true,
			wantWaiting:     []string{"cordoned"},
			wantUnavailable: 1,
			wantHeld:        1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			views := make([]*view.Node, 0, len(tc.nodes))
			for _, n := range tc.nodes {
				v := queuedAsAsked(view.Read(n))
				v.OtherPools = tc.otherPools[n.Name]
				for _, name := range tc.inflight {
					v.AdmittedUnseen = v.AdmittedUnseen || name == n.Name
				}
				if next, ok := tc.closed[n.Name]; ok {
					v.WindowOpen, v.NextOpening = false, next
				}
				if slices.Contains(tc.optedOut, n.Name) {
					v.OptedOut = &protocol.OptOut{Reason: v1alpha1.DoNotDisruptReason, Message: "held"}
				}
				views = append(views, v)
			}
			got := Admissions(views, nil, tc.counted, tc.maxUnavailable, tc.paused, tc.held)
			g.Expect(got.Admit).To(Equal(tc.wantAdmit), "admit")
			g.Expect(got.Waiting).To(Equal(tc.wantWaiting), "waiting")
			g.Expect(got.Unavailable).To(Equal(tc.wantUnavailable), "unavailable")
			g.Expect(got.MaxUnavailable).To(Equal(tc.maxUnavailable), "maxUnavailable")
			g.Expect(got.OutsideWindow).To(Equal(tc.wantOutsideWindow), "outsideWindow")
			g.Expect(got.NextOpening).To(Equal(tc.wantNextOpening), "nextOpening")
			g.Expect(got.BlockedByQuery).To(Equal(tc.wantHeld), "blocked by the query")
			g.Expect(got.OptedOut).To(Equal(tc.wantOptedOut), "optedOut")
			// Invariant 1, as the plan sees it: what it admits at a cost
			// never takes the pool over its budget.
			cost := 0
			for _, v := range views {
				for _, a := range got.Admit {
					if v.Node.Name == a && !v.UsesBudget() {
						cost++
					}
				}
			}
			if cost > 0 {
				g.Expect(got.Unavailable+cost).To(BeNumerically("<=", tc.maxUnavailable), "admissions stay within the budget")
			}
		})
	}
}
