package policies

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

func nodeState() *protocol.NodeState {
	n, _ := protocol.Read(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	return &n
}

func absoluteFreeze(name, start, end string) v1alpha1.FreezePeriod {
	s, err := time.Parse(time.RFC3339, start)
	if err != nil {
		panic(err)
	}
	e, err := time.Parse(time.RFC3339, end)
	if err != nil {
		panic(err)
	}
	return v1alpha1.FreezePeriod{Name: name, Start: &metav1.Time{Time: s}, End: &metav1.Time{Time: e}}
}

func recurringFreeze(name, schedule string, d time.Duration, tz string) v1alpha1.FreezePeriod {
	return v1alpha1.FreezePeriod{Name: name, Schedule: schedule, Duration: &metav1.Duration{Duration: d}, TimeZone: tz}
}

func TestFrozenAt(t *testing.T) {
	season := absoluteFreeze("season", "2026-11-20T00:00:00Z", "2026-12-27T00:00:00Z")
	fridays := recurringFreeze("fridays", "0 0 * * 5", 72*time.Hour, "Europe/Berlin")
	cases := map[string]struct {
		freezes []v1alpha1.FreezePeriod
		// now is a local time in zone.
		zone, now string
		// wantFrozen and wantName; wantUntil (when frozen) or wantNext
		// (when not), as local times in zone; empty for zero.
		wantFrozen          bool
		wantName            string
		wantUntil, wantNext string
	}{
		"no freezes: never frozen": {
			zone: "UTC", now: "2026-11-25 12:00",
		},
		"before an absolute freeze: not yet, and it says when": {
			freezes: []v1alpha1.FreezePeriod{season}, zone: "UTC", now: "2026-11-19 23:59",
			wantNext: "2026-11-20 00:00",
		},
		"exactly at its start it is in force": {
			freezes: []v1alpha1.FreezePeriod{season}, zone: "UTC", now: "2026-11-20 00:00",
			wantFrozen: true, wantName: "season", wantUntil: "2026-12-27 00:00",
		},
		"exactly at its end it is over, and none follows": {
			freezes: []v1alpha1.FreezePeriod{season}, zone: "UTC", now: "2026-12-27 00:00",
		},
		"a recurring freeze in its own zone, Friday 00:00 Berlin for 72h": {
			freezes: []v1alpha1.FreezePeriod{fridays}, zone: "Europe/Berlin", now: "2026-06-13 10:00",
			wantFrozen: true, wantName: "fridays", wantUntil: "2026-06-15 00:00",
		},
		"a recurring freeze not in force says when it starts next": {
			freezes: []v1alpha1.FreezePeriod{fridays}, zone: "Europe/Berlin", now: "2026-06-15 00:00",
			wantNext: "2026-06-19 00:00",
		},
		// 72h elapsed from Friday 00:00 CET on the weekend clocks go
		// forward (29 March 2026) ends at Monday 01:00 CEST.
		"across the spring daylight-saving change it lasts 72 elapsed hours": {
			freezes: []v1alpha1.FreezePeriod{fridays}, zone: "Europe/Berlin", now: "2026-03-28 12:00",
			wantFrozen: true, wantName: "fridays", wantUntil: "2026-03-30 01:00",
		},
		// ... and from Friday 00:00 CEST the weekend they go back (25
		// October) at Sunday 23:00 CET.
		"across the autumn change likewise": {
			freezes: []v1alpha1.FreezePeriod{fridays}, zone: "Europe/Berlin", now: "2026-10-24 12:00",
			wantFrozen: true, wantName: "fridays", wantUntil: "2026-10-25 23:00",
		},
		"freezes that follow on without a gap end at the end of the last": {
			freezes: []v1alpha1.FreezePeriod{
				absoluteFreeze("a", "2026-11-01T00:00:00Z", "2026-11-10T00:00:00Z"),
				absoluteFreeze("b", "2026-11-10T00:00:00Z", "2026-11-15T00:00:00Z"),
				absoluteFreeze("c", "2026-11-14T00:00:00Z", "2026-11-20T00:00:00Z"),
				absoluteFreeze("after-a-gap", "2026-11-21T00:00:00Z", "2026-11-30T00:00:00Z"),
			},
			zone: "UTC", now: "2026-11-05 00:00",
			wantFrozen: true, wantName: "a", wantUntil: "2026-11-20 00:00",
		},
		"overlapping: the one that lasts longest is named": {
			freezes: []v1alpha1.FreezePeriod{
				absoluteFreeze("short", "2026-11-01T00:00:00Z", "2026-11-03T00:00:00Z"),
				absoluteFreeze("long", "2026-11-02T00:00:00Z", "2026-11-09T00:00:00Z"),
			},
			zone: "UTC", now: "2026-11-02 12:00",
			wantFrozen: true, wantName: "long", wantUntil: "2026-11-09 00:00",
		},
		"a recurring freeze and an absolute one chain": {
			freezes: []v1alpha1.FreezePeriod{
				recurringFreeze("nightly", "0 22 * * *", 4*time.Hour, ""),
				absoluteFreeze("morning", "2026-06-11T02:00:00Z", "2026-06-11T08:00:00Z"),
			},
			zone: "UTC", now: "2026-06-10 23:00",
			wantFrozen: true, wantName: "nightly", wantUntil: "2026-06-11 08:00",
		},
		"the earliest of the next starts is told": {
			freezes: []v1alpha1.FreezePeriod{season, recurringFreeze("nightly", "0 22 * * *", 4*time.Hour, "")},
			zone:    "UTC", now: "2026-06-10 12:00",
			wantNext: "2026-06-10 22:00",
		},
		"an absolute freeze with an offset is read as that instant": {
			freezes: []v1alpha1.FreezePeriod{absoluteFreeze("tokyo", "2026-11-20T09:00:00+09:00", "2026-11-21T09:00:00+09:00")},
			zone:    "UTC", now: "2026-11-20 00:00",
			wantFrozen: true, wantName: "tokyo", wantUntil: "2026-11-21 00:00",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			st := EvaluateFreezes("pool p", tc.freezes, at(t, tc.zone, tc.now))
			g.Expect(st.Err).NotTo(HaveOccurred())
			g.Expect(st.Frozen).To(Equal(tc.wantFrozen))
			g.Expect(st.Freeze.Name).To(Equal(tc.wantName))
			want := func(s string) time.Time {
				if s == "" {
					return time.Time{}
				}
				return at(t, tc.zone, s)
			}
			g.Expect(st.Until).To(BeTemporally("==", want(tc.wantUntil)))
			g.Expect(st.Next).To(BeTemporally("==", want(tc.wantNext)))
		})
	}
}

// A recurring freeze that lasts longer than its schedule's period never
// ends: it is frozen at every moment, with an end far enough away that the
// gate only looks again then.
func TestFreezeLongerThanItsPeriodIsAlwaysInForce(t *testing.T) {
	g := NewWithT(t)
	always := []v1alpha1.FreezePeriod{recurringFreeze("always", "0 0 * * *", 8784*time.Hour, "")}
	start := at(t, "UTC", "2026-01-01 00:00")
	for _, now := range []time.Time{start, start.Add(time.Minute), start.Add(47 * time.Hour), start.Add(400 * 24 * time.Hour)} {
		st := EvaluateFreezes("pool p", always, now)
		g.Expect(st.Frozen).To(BeTrue(), "at %s", now)
		g.Expect(st.Until).To(BeTemporally(">", now.Add(24*time.Hour)))
	}
	// The biggest schedule rate with the biggest duration is still quick
	// to evaluate: every minute for 366 days.
	begin := time.Now()
	st := EvaluateFreezes("pool p", []v1alpha1.FreezePeriod{recurringFreeze("every-minute", "* * * * *", 8784*time.Hour, "")}, start)
	g.Expect(st.Frozen).To(BeTrue())
	g.Expect(time.Since(begin)).To(BeNumerically("<", time.Second))
}

// A freeze the operator cannot read freezes its owner, and says which and
// why: it is never taken for no freeze.
func TestUnreadableFreezeFailsClosed(t *testing.T) {
	now := at(t, "UTC", "2026-06-10 12:00")
	cases := map[string]struct {
		freeze v1alpha1.FreezePeriod
		// wantErr are words the error must carry.
		wantErr []string
	}{
		"unknown time zone": {
			freeze: recurringFreeze("fridays", "0 0 * * 5", time.Hour, "Mars/Olympus"), wantErr: []string{`"fridays"`, "pool p", "Mars/Olympus"},
		},
		"the operator's Local zone": {
			freeze: recurringFreeze("local", "0 0 * * 5", time.Hour, "Local"), wantErr: []string{`"local"`, "Local"},
		},
		"not a cron expression": {
			freeze: recurringFreeze("bad-cron", "every friday", time.Hour, ""), wantErr: []string{`"bad-cron"`, "every friday"},
		},
		"a schedule that never fires": {
			freeze: recurringFreeze("never", "0 0 30 2 *", time.Hour, ""), wantErr: []string{`"never"`, "never fires"},
		},
		"a descriptor": {
			freeze: recurringFreeze("daily", "@daily", time.Hour, ""), wantErr: []string{`"daily"`},
		},
		"zero duration": {
			freeze: recurringFreeze("zero", "0 0 * * 5", 0, ""), wantErr: []string{`"zero"`, "positive"},
		},
		"end before start": {
			freeze: absoluteFreeze("backwards", "2026-06-11T00:00:00Z", "2026-06-10T00:00:00Z"), wantErr: []string{`"backwards"`, "not after start"},
		},
		"both kinds": {
			freeze: func() v1alpha1.FreezePeriod {
				f := absoluteFreeze("both", "2026-06-01T00:00:00Z", "2026-06-30T00:00:00Z")
				f.Schedule, f.Duration = "0 0 * * 5", &metav1.Duration{Duration: time.Hour}
				return f
			}(),
			wantErr: []string{`"both"`, "both absolute"},
		},
		"neither kind": {
			freeze: v1alpha1.FreezePeriod{Name: "empty"}, wantErr: []string{`"empty"`, "neither"},
		},
		"start without end": {
			freeze: v1alpha1.FreezePeriod{Name: "open-ended", Start: &metav1.Time{Time: now}}, wantErr: []string{`"open-ended"`, "both start and end"},
		},
		"timeZone on an absolute freeze": {
			freeze: func() v1alpha1.FreezePeriod {
				f := absoluteFreeze("zoned", "2026-06-01T00:00:00Z", "2026-06-30T00:00:00Z")
				f.TimeZone = "Europe/Berlin"
				return f
			}(),
			wantErr: []string{`"zoned"`, "timeZone"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			good := absoluteFreeze("over", "2020-01-01T00:00:00Z", "2020-01-02T00:00:00Z")
			st := EvaluateFreezes("pool p", []v1alpha1.FreezePeriod{good, tc.freeze}, now)
			g.Expect(st.Frozen).To(BeTrue())
			g.Expect(st.Err).To(HaveOccurred())
			for _, w := range tc.wantErr {
				g.Expect(st.Err.Error()).To(ContainSubstring(w))
			}
			g.Expect(st.Describe()).To(ContainSubstring("nothing it holds is admitted until it can be read"))
		})
	}
}

func TestFreezeDescribe(t *testing.T) {
	g := NewWithT(t)
	f := absoluteFreeze("season", "2026-11-20T00:00:00Z", "2026-12-27T00:00:00Z")
	f.Reason = "shopping season"
	st := EvaluateFreezes("RebootPolicy kernel", []v1alpha1.FreezePeriod{f}, at(t, "UTC", "2026-12-01 00:00"))
	g.Expect(st.Describe()).To(Equal("RebootPolicy kernel's freeze season (shopping season) until 2026-12-27T00:00:00Z"))
	g.Expect(FreezeState{}.Describe()).To(BeEmpty())
	g.Expect(strings.Contains(st.Describe(), "nothing")).To(BeFalse())
}

func TestFrozenWait(t *testing.T) {
	until := at(t, "UTC", "2026-12-27 00:00")
	cases := map[string]struct {
		in         WaitInput
		wantReason string
		wantMsg    []string
	}{
		"a frozen node says which freeze and until when": {
			in:         WaitInput{Pool: "p", Node: nodeState(), Windows: WindowWait{Shut: true, Next: until, Frozen: []string{"pool p's freeze season until 2026-12-27T00:00:00Z"}}},
			wantReason: v1alpha1.FrozenReason, wantMsg: []string{"frozen by pool p's freeze season", "admitted from 2026-12-27T00:00:00Z"},
		},
		"a freeze comes before a shut window": {
			in:         WaitInput{Pool: "p", Node: nodeState(), Windows: WindowWait{Shut: true, Closed: []string{"pool p"}, Frozen: []string{"RebootPolicy k's freeze f until x"}}},
			wantReason: v1alpha1.FrozenReason, wantMsg: []string{"RebootPolicy k's freeze f", "also outside the maintenance windows of pool p"},
		},
		"an unreadable freeze holds with its own reason": {
			in:         WaitInput{Pool: "p", Node: nodeState(), Windows: WindowWait{Shut: true, FreezeProblems: []string{`freeze "x" of pool p cannot be read: bad`}}},
			wantReason: v1alpha1.InvalidFreezeReason, wantMsg: []string{`freeze "x" of pool p cannot be read`},
		},
		"the pool counts its waiting nodes": {
			in:         WaitInput{Pool: "p", Windows: WindowWait{Shut: true, Frozen: []string{"pool p's freeze season until x"}}, Budget: Budget{Pending: 2, Waiting: []string{"a", "b"}}},
			wantReason: v1alpha1.FrozenReason, wantMsg: []string{"Frozen by pool p's freeze season", "2 nodes waiting"},
		},
		"a pause comes first": {
			in:         WaitInput{Pool: "p", Paused: true, Windows: WindowWait{Shut: true, Frozen: []string{"pool p's freeze"}}, Budget: Budget{Pending: 1, Waiting: []string{"a"}}},
			wantReason: v1alpha1.PausedReason,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			reason, msg, ok := Wait(tc.in)
			g.Expect(ok).To(BeTrue())
			g.Expect(reason).To(Equal(tc.wantReason))
			for _, w := range tc.wantMsg {
				g.Expect(msg).To(ContainSubstring(w))
			}
		})
	}
	// Not shut: nothing frozen holds (a request passed with ignoreFreezes).
	_, _, ok := Frozen(WaitInput{Windows: WindowWait{Frozen: []string{"x"}}})
	NewWithT(t).Expect(ok).To(BeFalse())
}

// The most costly freezes the API accepts, 32 recurring ones that never
// end, are evaluated quickly: the gate, the maintenance controller and
// every metrics scrape evaluate them.
func BenchmarkFrozenAtWorstCase(b *testing.B) {
	var fs []v1alpha1.FreezePeriod
	for i := range v1alpha1.MaxFreezes {
		fs = append(fs, recurringFreeze(strings.Repeat("x", i+1), "* * * * *", 8784*time.Hour, "Europe/Berlin"))
	}
	parsed, err := ParseFreezes("pool p", fs)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for b.Loop() {
		if !FrozenAt(parsed, now).Frozen {
			b.Fatal("not frozen")
		}
	}
}
