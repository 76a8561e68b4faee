// Command perevent saves what the controllers' per-event benchmarks
// (BenchmarkGateEvent, BenchmarkAftercareEvent, BenchmarkMaintenanceEvent:
// one event's reconcile in pools of 500, 5000 and 20000 realistic nodes,
// without an API server) measured: it reads `go test -bench` output on its
// standard input, passes it through, and writes each controller's figures
// to test/bench/results/event-<controller>.json with the command, commit,
// date and machine, for test/bench/plot to draw. make bench-controllers
// runs it.
package main

import (
	"bufio"
	"encoding/json"
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
	Points     []Point            `json:"points"`
}

// Point is one pool size's figures.
type Point struct {
	Nodes       int     `json:"nodes"`
	Iterations  int     `json:"iterations"`
	NsPerOp     float64 `json:"nsPerOp"`
	P50Ms       float64 `json:"reconcileP50Ms"`
	P99Ms       float64 `json:"reconcileP99Ms"`
	BytesPerOp  float64 `json:"bytesPerOp"`
	AllocsPerOp float64 `json:"allocsPerOp"`
	// KeptMiB is the heap the controller holds between reconciles, when
	// its benchmark says (MiB-kept).
	KeptMiB float64 `json:"keptMiB,omitempty"`
}

// line is a benchmark's result line, e.g.
// "BenchmarkGateEvent/nodes=500-2  40  7885408 ns/op  3.405 ms/reconcile-p50 ...".
var line = regexp.MustCompile(`^Benchmark(Gate|Aftercare|Maintenance)Event/nodes=(\d+)(?:-\d+)?\s+(\d+)\s+(.*)$`)

func main() {
	root := repo.Root()
	dir := flag.String("results", filepath.Join(root, "test", "bench", "results"), "Directory to write event-<controller>.json in.")
	command := flag.String("command", "make bench-controllers", "The command that ran the benchmarks, recorded with the results.")
	flag.Parse()
	results, err := parse(io.TeeReader(os.Stdin, os.Stdout))
	if err == nil && len(results) == 0 {
		err = fmt.Errorf("no per-event benchmark result in the input")
	}
	if err == nil {
		err = save(*dir, *command, root, results)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "perevent:", err)
		os.Exit(1)
	}
}

// parse reads the benchmarks' result lines, by controller.
func parse(r io.Reader) (map[string][]Point, error) {
	out := map[string][]Point{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := line.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		nodes, _ := strconv.Atoi(m[2])
		iterations, _ := strconv.Atoi(m[3])
		p := Point{Nodes: nodes, Iterations: iterations}
		f := strings.Fields(m[4])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", sc.Text(), err)
			}
			switch f[i+1] {
			case "ns/op":
				p.NsPerOp = v
			case "ms/reconcile-p50":
				p.P50Ms = v
			case "ms/reconcile-p99":
				p.P99Ms = v
			case "B/op":
				p.BytesPerOp = v
			case "allocs/op":
				p.AllocsPerOp = v
			case "MiB-kept":
				p.KeptMiB = v
			}
		}
		controller := strings.ToLower(m[1])
		out[controller] = append(out[controller], p)
	}
	return out, sc.Err()
}

func save(dir, command, root string, results map[string][]Point) error {
	commit, err := provenance.Commit(root)
	if err != nil {
		return err
	}
	for controller, points := range results {
		slices.SortFunc(points, func(a, b Point) int { return a.Nodes - b.Nodes })
		r := Result{Controller: controller, Command: command, Commit: commit, Date: time.Now().UTC().Truncate(time.Second),
			Machine: provenance.ThisMachine(), Points: points}
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
