package notify

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestSelectorLine(t *testing.T) {
	s := NewSelector([]string{"RolloutStarted", "DrainFailed"})
	for name, tc := range map[string]struct {
		event Event
		// want is the line's text; empty means the event is not notified.
		want string
	}{
		"a selected pool event": {
			event: Event{Reason: "RolloutStarted", Type: "Normal", Note: "Rollout of config v2 started", Kind: "MaintenancePool", Name: "blue"},
			want:  "RolloutStarted, pool blue: Rollout of config v2 started",
		},
		"a warning says so": {
			event: Event{Reason: "DrainFailed", Type: "Warning", Note: "drain of node n1 did not finish", Kind: "MaintenancePool", Name: "blue", RelatedKind: "Node"},
			want:  "Warning DrainFailed, pool blue: drain of node n1 did not finish",
		},
		"a node event of the default pool, which has no object": {
			event: Event{Reason: "DrainFailed", Type: "Warning", Note: "drain of node n1 did not finish", Kind: "Node", Name: "n1"},
			want:  "Warning DrainFailed, node n1: drain of node n1 did not finish",
		},
		"the node's copy of a pool event is left to the pool's": {
			event: Event{Reason: "DrainFailed", Type: "Warning", Note: "x", Kind: "Node", Name: "n1", RelatedKind: "MaintenancePool"},
		},
		"a reason not selected": {
			event: Event{Reason: "Admitted", Type: "Normal", Note: "x", Kind: "MaintenancePool", Name: "blue"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			line, ok := s.Line(tc.event)
			g.Expect(ok).To(Equal(tc.want != ""))
			g.Expect(line.Text).To(Equal(tc.want))
		})
	}
}

// What others wrote reaches a chat as plain text: a note quoting a forged
// daemon state or reason pings no channel, dresses no link, starts no line
// of its own.
func TestNotesFromOthersAreInert(t *testing.T) {
	g := NewWithT(t)
	note := "<!channel> reboot loop, see <https://evil.example/x|the runbook> @everyone & @here\nWarning RolloutFinished, pool blue: all good"
	line, ok := NewSelector([]string{"RebootLoop"}).Line(Event{Reason: "RebootLoop", Type: "Warning", Note: note, Kind: "Node", Name: "n1<@U123>"})
	g.Expect(ok).To(BeTrue())
	for _, s := range []string{"<", ">", "&", "@everyone", "@here", "@U123", "\n"} {
		g.Expect(line.Text).NotTo(ContainSubstring(s))
	}
	g.Expect(line.Text).To(And(ContainSubstring("‹!channel›"), ContainSubstring("https://evil.example/x|the runbook"), ContainSubstring("@\u2060everyone")),
		"still readable")
}

func TestLongNotesAreCut(t *testing.T) {
	g := NewWithT(t)
	line, ok := NewSelector([]string{"DrainFailed"}).Line(Event{Reason: "DrainFailed", Note: strings.Repeat("é", 5000), Kind: "Node", Name: "n1"})
	g.Expect(ok).To(BeTrue())
	g.Expect([]rune(line.Text)).To(HaveLen(maxLineLength))
	g.Expect(line.Text).To(HaveSuffix("…"))
}

// TestBatchStaysBoundedAndCountsTheRest: 500 events make one message of
// MaxLines lines and a count by reason, whatever their number.
func TestBatchStaysBoundedAndCountsTheRest(t *testing.T) {
	g := NewWithT(t)
	b := NewBatch(3)
	counted := 0
	for i := range 500 {
		reason := "DrainFailed"
		if i%100 == 99 {
			reason = "NodeNotBack"
		}
		if b.Add(Line{Reason: reason, Text: reason + " line"}) {
			counted++
		}
	}
	g.Expect(counted).To(Equal(497))
	m := b.Take()
	g.Expect(b.Empty()).To(BeTrue(), "taking empties the batch")
	g.Expect(m.Lines).To(HaveLen(3))
	g.Expect(m.Events()).To(Equal(500))
	g.Expect(m.Text()).To(Equal("DrainFailed line\nDrainFailed line\nDrainFailed line\n… and 497 more (DrainFailed 492, NodeNotBack 5): kubectl get events -n default"))
	g.Expect(b.Take().Events()).To(BeZero())
}

func TestPacer(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := Pacer{Interval: time.Minute}
	g.Expect(p.Wait(t0)).To(BeZero(), "the first message goes at once")
	p.Sent(t0)
	g.Expect(p.Wait(t0.Add(10*time.Second))).To(Equal(50*time.Second), "the next waits for the interval")
	g.Expect(p.Wait(t0.Add(time.Minute))).To(BeZero())
	g.Expect(p.Wait(t0.Add(time.Hour))).To(BeZero(), "after a quiet spell, at once again")
}

func TestOptionsValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		opts Options
		// want is part of the error; empty means valid.
		want string
	}{
		"defaults":            {opts: Options{}},
		"reasons":             {opts: Options{Reasons: []string{"RolloutStarted", "Rebooting"}}},
		"not a reason":        {opts: Options{Reasons: []string{"drain failed"}}, want: "--notify-reasons"},
		"too many reasons":    {opts: Options{Reasons: strings.Split(strings.Repeat("A,", MaxReasons+1)[:2*(MaxReasons+1)-1], ",")}, want: "at most 64"},
		"a negative interval": {opts: Options{Interval: -time.Second}, want: "--notify-interval"},
		"a day and more":      {opts: Options{Interval: 25 * time.Hour}, want: "--notify-interval"},
		"a long send timeout": {opts: Options{SendTimeout: time.Hour}, want: "--notify-send-timeout"},
		"too many lines":      {opts: Options{MaxLines: 21}, want: "--notify-max-lines"},
		"a long title":        {opts: Options{Title: strings.Repeat("x", 129)}, want: "--notify-title"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			err := tc.opts.Validate()
			if tc.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

func TestParseURLsNeverRepeatsAURL(t *testing.T) {
	g := NewWithT(t)
	rs, errs := parseURLs(`
# comments and blank lines are skipped
generic://127.0.0.1:1/hook?disabletls=yes

slakc://xoxb-secret-token@channel
not a url at all secret-token
teams://secret-token@nowhere
`)
	g.Expect(rs).To(HaveLen(1))
	g.Expect(rs[0].name).To(Equal("1-generic"))
	g.Expect(errs).To(HaveLen(3))
	g.Expect(errs[0]).To(MatchError(ContainSubstring("URL 2 (slakc): unknown service")))
	g.Expect(errs[1]).To(MatchError(ContainSubstring("URL 3: not a URL")))
	g.Expect(errs[2]).To(MatchError(ContainSubstring("URL 4 (teams)")))
	for _, err := range errs {
		g.Expect(err.Error()).NotTo(ContainSubstring("secret-token"))
	}
}

func TestRedactKeepsSchemeAndHost(t *testing.T) {
	g := NewWithT(t)
	g.Expect(redact(`sending HTTP request: Post "https://hooks.slack.com/services/T0/B0/secret": dial tcp: i/o timeout`)).
		To(Equal(`sending HTTP request: Post "https://hooks.slack.com/…": dial tcp: i/o timeout`))
	g.Expect(redact(`Post "http://user:pass@127.0.0.1:8080/hook?token=secret": EOF`)).To(Equal(`Post "http://127.0.0.1/…": EOF`))
}
