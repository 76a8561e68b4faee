// Command plot draws the rolling-reboot benchmark's results
// (test/bench/results/rolling-*.json) against the number of nodes into
// test/bench/results/scaling.svg: makespan over ideal, slot-to-approval
// p99, the operator's peak RSS and API requests per reboot, each with the
// issue's goals, and the per-event figures (event-*.json: the operator's
// time per event, p50, and the gate's mean); under them the commit, date
// and command of every result. A result that did not finish is drawn
// hollow, its makespan labelled as the lower bound it is, its figures per
// reboot not drawn, and its line says how far it got; one made from a
// work tree that differed from its commit is ringed and says so. make
// bench runs it after the benchmarks; `go run ./test/bench/plot` redraws
// by hand. It writes the SVG by hand: no dependencies.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kmaint/kmaint/test/repo"
)

func main() {
	dflt := filepath.Join(repo.Root(), "test", "bench", "results")
	dir := flag.String("results", dflt, "Directory of the rolling-*.json results; the SVG goes there as scaling.svg.")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	results, err := readResults(dir)
	if err != nil {
		return err
	}
	if len(results) == 0 {
		return fmt.Errorf("no rolling-*.json in %s", dir)
	}
	out := filepath.Join(dir, "scaling.svg")
	if err := os.WriteFile(out, []byte(draw(results)), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	fmt.Println(out)
	return nil
}
