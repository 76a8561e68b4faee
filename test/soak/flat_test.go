package soak_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kmaint/kmaint/test/soak/checker"
)

// flatAge is the age from which a replica's memory and goroutines count: a
// replica starting fills its caches first.
const flatAge = time.Minute

// flat holds the leading replica's memory and goroutines to staying flat:
// their most in the last third of the run at most half again their most in
// the first third (and 16 MiB, 50 goroutines more), counting leaders a
// minute old or more. A leak grows with the run; a replica killed and
// started again starts from nothing, which is why each counts from its
// minute; a follower runs no controller, and compared with a leader would
// look like growth. It says so when the samples cannot tell.
func flat(samples []sample, run time.Duration) (verdict string, broken []checker.Violation) {
	third := run.Seconds() / 3
	var firstRSS, lastRSS, firstG, lastG float64
	var first, last int
	for _, s := range samples {
		if s.AgeSeconds < flatAge.Seconds() || !s.Leader {
			continue
		}
		switch {
		case s.Seconds <= third:
			first++
			firstRSS, firstG = max(firstRSS, s.RSSMiB), max(firstG, s.Goroutines)
		case s.Seconds >= 2*third:
			last++
			lastRSS, lastG = max(lastRSS, s.RSSMiB), max(lastG, s.Goroutines)
		}
	}
	if first == 0 || last == 0 {
		return "not measured: no leader a minute old in the first or the last third of the run", nil
	}
	verdict = fmt.Sprintf("most RSS %.0f -> %.0f MiB, most goroutines %.0f -> %.0f (first -> last third)", firstRSS, lastRSS, firstG, lastG)
	now := time.Now()
	if lastRSS > 1.5*firstRSS+16 {
		broken = append(broken, checker.Violation{At: now, Invariant: "operator", Message: "the operator's memory grew: " + verdict})
	}
	if lastG > 2*firstG+50 {
		broken = append(broken, checker.Violation{At: now, Invariant: "operator", Message: "the operator's goroutines grew: " + verdict})
	}
	return verdict, broken
}

func TestFlatCatchesAGrowingOperatorAndSaysWhenItCannotTell(t *testing.T) {
	run := 9 * time.Minute
	at := func(minute float64, rss, goroutines float64) sample {
		return sample{Seconds: minute * 60, AgeSeconds: minute * 60, RSSMiB: rss, Goroutines: goroutines, Leader: true}
	}
	steady := []sample{at(2, 60, 200), at(5, 64, 230), at(8, 66, 210)}
	if verdict, broken := flat(steady, run); len(broken) > 0 {
		t.Errorf("a steady operator broke %v (%s)", broken, verdict)
	}
	leaking := []sample{at(2, 60, 200), at(5, 90, 400), at(8, 120, 700)}
	if _, broken := flat(leaking, run); len(broken) != 2 {
		t.Errorf("a leaking operator broke %v, want its memory and its goroutines", broken)
	}
	// A follower early and a leader late is no growth (found by a soak:
	// 58 goroutines "grew" to 257).
	follower := at(2, 40, 58)
	follower.Leader = false
	if verdict, broken := flat([]sample{follower, at(8, 79, 257)}, run); len(broken) > 0 {
		t.Errorf("a follower counted against the leader: %v (%s)", broken, verdict)
	}
	young := []sample{{Seconds: 60, AgeSeconds: 30, RSSMiB: 60, Leader: true}, {Seconds: 480, AgeSeconds: 30, RSSMiB: 500, Leader: true}}
	if verdict, broken := flat(young, run); len(broken) > 0 || !strings.HasPrefix(verdict, "not measured") {
		t.Errorf("replicas under a minute old: %q, %v", verdict, broken)
	}
}
