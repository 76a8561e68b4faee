package soak_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/bench/provenance"
	"github.com/kmaint/kmaint/test/soak/checker"
	"github.com/kmaint/kmaint/test/testbed"
)

// result is what a soak saves.
type result struct {
	Seed            uint64         `json:"seed"`
	DurationSeconds float64        `json:"durationSeconds"`
	Nodes           int            `json:"nodes"`
	Pools           int            `json:"pools"`
	RebootsByDaemon int            `json:"rebootsByDaemon"`
	RebootsByHand   int            `json:"rebootsByHand"`
	Done            map[string]int `json:"done"`
	Requests        int            `json:"requests"`
	// Outcomes counts the NodeMaintenances by source and how they ended
	// ("" for open); Complete is the seconds from first sight to the end,
	// by source.
	Outcomes map[string]map[string]int `json:"outcomes"`
	Complete map[string]percentiles    `json:"completeSeconds"`
	// Failures are the messages of the records that failed, each a
	// reason a fault should explain.
	Failures []string `json:"failures"`
	// FailureReasons counts the failures by message, names and numbers
	// taken out (reason).
	FailureReasons map[string]int `json:"failureReasons"`
	// EndSeconds is how long after the faults stopped every request had
	// ended and every node was back in service.
	EndSeconds float64 `json:"endSeconds"`
	// Checked counts what each check was held to (checker.Checked): what
	// was checked only, never what was excused.
	Checked map[string]int `json:"checked"`
	// Excused counts, apart, what the checker let pass and why, by
	// reason (checker.Excused): the blind windows (their number and
	// seconds), the reboots whose approval a blind window hid, each
	// admission or approval a grace let pass (and the lags it covered).
	Excused map[string]checker.Excuse `json:"excused"`
	// Ends counts how the soak's requests ended, by source: carried out
	// by a reboot kmaint approved naming them, overtaken by another reboot
	// their record succeeded on, unrecorded (their node rebooted before
	// kmaint recorded them), refused (checker.Ending says each exactly).
	// Config requests are counted from their records.
	Ends       map[string]map[checker.Ending]int `json:"requestEnds"`
	Violations []checker.Violation               `json:"violations"`
	// Blind are the windows the checker listed again after, not seeing
	// the changes in them one by one (package checker).
	Blind []checker.Window `json:"blind"`
	// Timeline is when each thing was done, and each reboot ("reboot"
	// by a daemon, "reboot-by-hand"), in seconds from the start.
	Timeline []moment `json:"timeline"`
	Operator []sample `json:"operator"`
	// OperatorFlat says how the replicas' memory and goroutines went.
	OperatorFlat string             `json:"operatorFlat"`
	Machine      provenance.Machine `json:"machine"`
	Date         string             `json:"date"`
	Command      string             `json:"command"`
	Commit       string             `json:"commit"`
}

type percentiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	N   int     `json:"n"`
}

func (s *soak) result(start, quiet, ended time.Time, violations []checker.Violation) result {
	byDaemon, byHand := s.checker.Reboots()
	res := result{
		Seed: *seed, DurationSeconds: quiet.Sub(start).Seconds(), Nodes: len(s.cluster.Nodes()), Pools: len(s.pools),
		RebootsByDaemon: byDaemon, RebootsByHand: byHand, Done: map[string]int{},
		Outcomes: map[string]map[string]int{}, Complete: map[string]percentiles{}, FailureReasons: map[string]int{},
		EndSeconds: ended.Sub(quiet).Seconds(), Violations: violations,
		Machine: provenance.ThisMachine(), Date: time.Now().UTC().Format(time.RFC3339),
		Command: fmt.Sprintf("make soak SOAK_SEED=%d SOAK_DURATION=%s SOAK_NODES=%d SOAK_MIN_EACH=%d SOAK_FLAGS='-soak.pace=%s -soak.fault-pace=%s -soak.min-reboots=%d'",
			*seed, *duration, *nodes, *minEach, *pace, *faultPace, *minReboots),
	}
	s.mu.Lock()
	for k, v := range s.done {
		res.Done[k] = v
	}
	s.mu.Unlock()
	secs := map[string][]float64{}
	for _, o := range s.checker.Outcomes() {
		src := string(o.Source)
		if res.Outcomes[src] == nil {
			res.Outcomes[src] = map[string]int{}
		}
		res.Outcomes[src][string(o.Phase)]++
		res.Requests++
		if o.Phase != "" {
			secs[src] = append(secs[src], o.Seconds)
		}
		if o.Phase == v1alpha1.PhaseFailed {
			res.Failures = append(res.Failures, fmt.Sprintf("%s: %s", src, o.Message))
			res.FailureReasons[src+": "+reason(o.Message)]++
		}
	}
	for src, xs := range secs {
		sort.Float64s(xs)
		res.Complete[src] = percentiles{P50: quantile(xs, 0.5), P99: quantile(xs, 0.99), N: len(xs)}
	}
	s.replicas.mu.Lock()
	res.Operator = slices.Clone(s.replicas.samples)
	s.replicas.mu.Unlock()
	if commit, err := provenance.Commit(testbed.RepoRoot()); err == nil {
		res.Commit = commit
	}
	return res
}

// timelineWith is the things done and the reboots, in time order.
func (s *soak) timelineWith(reboots []checker.Reboot) []moment {
	s.mu.Lock()
	out := slices.Clone(s.timeline)
	s.mu.Unlock()
	for _, r := range reboots {
		kind := "reboot"
		if !r.ByDaemon {
			kind = "reboot-by-hand"
		}
		out = append(out, moment{Seconds: r.At.Sub(s.start).Seconds(), Kind: kind})
	}
	slices.SortFunc(out, func(a, b moment) int { return cmp.Compare(a.Seconds, b.Seconds) })
	return out
}

// excusedCounts is each reason's count, for a log line.
func excusedCounts(ex map[string]checker.Excuse) map[string]int {
	out := map[string]int{}
	for reason, e := range ex {
		out[reason] = e.Count
	}
	return out
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func (r result) save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	name := fmt.Sprintf("soak-%d-%s.json", r.Seed, strings.ReplaceAll(time.Duration(r.DurationSeconds*float64(time.Second)).Round(time.Minute).String(), "0s", ""))
	return os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644)
}

// names are what differs between two failures for one reason: node and
// record names, boot IDs, durations, times and counts.
var names = regexp.MustCompile(`[a-z]+(-[a-z0-9]+)*-[0-9a-f]*[0-9][0-9a-f]*\b|[0-9a-f]{8}-[0-9a-f-]{27}|[0-9][0-9.:TZhms+-]*`)

// reason is a failure's message with its names and numbers replaced by *.
func reason(msg string) string { return names.ReplaceAllString(msg, "*") }

func TestAFailuresReasonLeavesOutItsNamesAndNumbers(t *testing.T) {
	for msg, want := range map[string]string{
		"node soak-b-008 already has an open request, NodeMaintenance soak-41; this one will not be carried out": "node * already has an open request, NodeMaintenance *; this one will not be carried out",
		"the node did not come back within 20s of its reboot (boot 1c305bb4-02f6-480b-8b1d-c19fe2c74661)":        "the node did not come back within * of its reboot (boot *)",
	} {
		if got := reason(msg); got != want {
			t.Errorf("reason(%q) = %q, want %q", msg, got, want)
		}
	}
}
