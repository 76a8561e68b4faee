// Command perevent saves what the controllers' per-event benchmarks
// (BenchmarkGateEvent, BenchmarkAftercareEvent, BenchmarkMaintenanceEvent,
// and BenchmarkAftercareCompletion, saved as aftercare-completion:
// one event's reconcile in pools of 500, 5000 and 20000 realistic nodes,
// without an API server; and BenchmarkGateLiveRead, the gate's reads past
// its cache against a real API server) measured: it reads `go test -bench`
// output on its standard input, passes it through, and writes each
// controller's figures to test/bench/results/event-<controller>.json with
// the command, commit, date and machine, for test/bench/plot to draw. make
// bench-controllers runs it.
//
// A result says what the code of a commit does: perevent refuses to write
// into test/bench/results from a work tree that differs from its commit
// (commit first), at its start and again before it writes.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kmaint/kmaint/test/bench/provenance"
	"github.com/kmaint/kmaint/test/repo"
)

// Result is one controller's figures; test/bench/plot reads it.
type Result struct {
	Controller string             `json:"controller"`
	Command    string             `json:"command"`
	Commit     string             `json:"commit"`
	Date       time.Time          `json:"date"`
	Machine    provenance.Machine `json:"machine"`
	// Note says what else ran on the machine, as the command's caller
	// told it (-note).
	Note string `json:"note,omitempty"`
	// Counted and LeftOut say what an event's time holds.
	Counted string  `json:"counted"`
	LeftOut string  `json:"leftOut"`
	Points  []Point `json:"points"`
	// LiveRead is the time of the gate's reads past its cache against a
	// real API server (the gate's result only).
	LiveRead *LiveRead `json:"liveRead,omitempty"`
}

// counted and leftOut say what memcluster.Events counts as the operator's
// time and what it leaves out.
const (
	counted = "the reconcile, with the patches it builds (client.MergeFrom's encodings and diff), its reads of the cache " +
		"and past it (answered from memory), and the informers' store taking each write; the handlers of the controller's " +
		"watches (SetupWithManager's), for its own writes and for the changes others made since the last event; the " +
		"Kubernetes Events made (not written)"
	leftOut = "subtracted: the memory cluster applying each write as an API server would (the version check; the stored " +
		"object encoded, the patch merged, the result decoded), reported added back as withWrites; not modelled, so in " +
		"neither: the network and the round trips of the reads past the cache (liveRead times them against a real API " +
		"server), the encoding of requests and decoding of answers and watch events (a copy stands for the answer's " +
		"decoding), the Events' writes, the drains' pod lists and evictions (drains are done at their first step), and the " +
		"other controllers' handlers of the same changes"
)

// Point is one pool size's figures, per event (one reconcile).
type Point struct {
	Nodes      int     `json:"nodes"`
	Iterations int     `json:"iterations"`
	NsPerOp    float64 `json:"nsPerOp"`
	// MeanMs, P50Ms and P99Ms are the operator's time per event.
	MeanMs float64 `json:"eventMeanMs"`
	P50Ms  float64 `json:"eventP50Ms"`
	P99Ms  float64 `json:"eventP99Ms"`
	// WithWrites* add back the memory cluster's serving of the writes.
	WithWritesMeanMs float64 `json:"withWritesMeanMs"`
	WithWritesP50Ms  float64 `json:"withWritesP50Ms"`
	WithWritesP99Ms  float64 `json:"withWritesP99Ms"`
	Writes           float64 `json:"writesPerEvent"`
	// LiveReads are the reads past the cache, each a round trip to the
	// API server in a real cluster; LiveReadsByKind by verb and kind.
	LiveReads       float64            `json:"liveReadsPerEvent"`
	LiveReadsByKind map[string]float64 `json:"liveReadsPerEventByKind,omitempty"`
	K8sEvents       float64            `json:"k8sEventsPerEvent"`
	BytesPerOp      float64            `json:"bytesPerOp"`
	AllocsPerOp     float64            `json:"allocsPerOp"`
	// KeptMiB is the heap the controller holds between reconciles, when
	// its benchmark says (MiB-kept).
	KeptMiB float64 `json:"keptMiB,omitempty"`
}

// LiveRead is BenchmarkGateLiveRead's figures: one GET of the pool or the
// MaintenanceGate, and the two of a reconcile, against a real API server.
type LiveRead struct {
	Gets      int     `json:"gets"`
	GetMeanMs float64 `json:"getMeanMs"`
	GetP50Ms  float64 `json:"getP50Ms"`
	GetP99Ms  float64 `json:"getP99Ms"`
	BothP50Ms float64 `json:"bothP50Ms"`
	BothP99Ms float64 `json:"bothP99Ms"`
	// Server says which API server answered.
	Server string `json:"server"`
}

// line is a per-event benchmark's result line, e.g.
// "BenchmarkGateEvent/nodes=500-2  40  7885408 ns/op  3.405 ms/event-p50 ...";
// liveLine BenchmarkGateLiveRead's.
var (
	line     = regexp.MustCompile(`^Benchmark(Gate|Aftercare|Maintenance)(Event|Completion)/nodes=(\d+)(?:-\d+)?\s+(\d+)\s+(.*)$`)
	liveLine = regexp.MustCompile(`^BenchmarkGateLiveRead(?:-\d+)?\s+(\d+)\s+(.*)$`)
)

// liveServer is what answered BenchmarkGateLiveRead.
const liveServer = "envtest's kube-apiserver and etcd on the same machine, over loopback"

func main() {
	root := repo.Root()
	committed := filepath.Join(root, "test", "bench", "results")
	dir := flag.String("results", committed, "Directory to write event-<controller>.json in.")
	command := flag.String("command", "make bench-controllers", "The command that ran the benchmarks, recorded with the results.")
	note := flag.String("note", "", "What else ran on the machine, recorded with the results.")
	flag.Parse()
	guard := func() error {
		if *dir != committed {
			return nil
		}
		return clean(root)
	}
	err := guard()
	var results map[string][]Point
	var live *LiveRead
	if err == nil {
		results, live, err = parse(io.TeeReader(os.Stdin, os.Stdout))
	}
	if err == nil && len(results) == 0 {
		err = errors.New("no per-event benchmark result in the input")
	}
	if err == nil {
		err = guard()
	}
	if err == nil {
		err = save(*dir, *command, *note, root, results, live)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "perevent:", err)
		os.Exit(1)
	}
}

// clean refuses a work tree that differs from its commit.
func clean(root string) error {
	commit, err := provenance.Commit(root)
	if err != nil {
		return err
	}
	if provenance.Dirty(commit) {
		return fmt.Errorf("the work tree differs from %s (git status): commit first; a result under test/bench/results must say what a commit does (-results DIR writes elsewhere)",
			strings.TrimSuffix(commit, "-dirty"))
	}
	return nil
}

// parse reads the benchmarks' result lines, by controller, and the live
// read's.
func parse(r io.Reader) (map[string][]Point, *LiveRead, error) {
	out := map[string][]Point{}
	var live *LiveRead
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if m := liveLine.FindStringSubmatch(text); m != nil {
			metrics, err := fields(m[2])
			if err != nil {
				return nil, nil, fmt.Errorf("%q: %w", text, err)
			}
			live = &LiveRead{Gets: int(metrics["gets"]), GetMeanMs: metrics["ms/get-mean"], GetP50Ms: metrics["ms/get-p50"],
				GetP99Ms: metrics["ms/get-p99"], BothP50Ms: metrics["ms/both-p50"], BothP99Ms: metrics["ms/both-p99"], Server: liveServer}
			continue
		}
		m := line.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		nodes, _ := strconv.Atoi(m[3])
		iterations, _ := strconv.Atoi(m[4])
		metrics, err := fields(m[5])
		if err != nil {
			return nil, nil, fmt.Errorf("%q: %w", text, err)
		}
		p := Point{Nodes: nodes, Iterations: iterations, NsPerOp: metrics["ns/op"],
			MeanMs: metrics["ms/event-mean"], P50Ms: metrics["ms/event-p50"], P99Ms: metrics["ms/event-p99"],
			WithWritesMeanMs: metrics["ms/event-with-writes-mean"], WithWritesP50Ms: metrics["ms/event-with-writes-p50"],
			WithWritesP99Ms: metrics["ms/event-with-writes-p99"], Writes: metrics["writes/event"],
			LiveReads: metrics["live-reads/event"], K8sEvents: metrics["k8s-events/event"],
			BytesPerOp: metrics["B/op"], AllocsPerOp: metrics["allocs/op"], KeptMiB: metrics["MiB-kept"]}
		for unit, v := range metrics {
			// live-get-MaintenancePool/event: "get MaintenancePool".
			if kind, ok := strings.CutPrefix(strings.TrimSuffix(unit, "/event"), "live-"); ok && kind != "reads" && v > 0 {
				if p.LiveReadsByKind == nil {
					p.LiveReadsByKind = map[string]float64{}
				}
				p.LiveReadsByKind[strings.Replace(kind, "-", " ", 1)] = v
			}
		}
		if p.P50Ms == 0 && p.MeanMs == 0 {
			return nil, nil, fmt.Errorf("%q: no ms/event-p50 or -mean: a benchmark that does not measure with memcluster.Events", text)
		}
		controller := strings.ToLower(m[1])
		if m[2] == "Completion" {
			// One event of a kind of its own: aftercare's completions.
			controller += "-completion"
		}
		out[controller] = append(out[controller], p)
	}
	return out, live, sc.Err()
}

// fields reads a result line's "value unit" pairs.
func fields(s string) (map[string]float64, error) {
	f := strings.Fields(s)
	out := map[string]float64{}
	for i := 0; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return nil, err
		}
		out[f[i+1]] = v
	}
	return out, nil
}

func save(dir, command, note, root string, results map[string][]Point, live *LiveRead) error {
	commit, err := provenance.Commit(root)
	if err != nil {
		return err
	}
	for controller, points := range results {
		slices.SortFunc(points, func(a, b Point) int { return a.Nodes - b.Nodes })
		r := Result{Controller: controller, Command: command, Commit: commit, Date: time.Now().UTC().Truncate(time.Second),
			Machine: provenance.ThisMachine(), Note: note, Counted: counted, LeftOut: leftOut, Points: points}
		if controller == "gate" {
			r.LiveRead = live
		}
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "event-"+controller+".json"), append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}
