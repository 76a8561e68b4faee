// Command run is `make mutants`: for each mutant of test/mutants it makes a
// scratch copy of the tree, applies the mutant's patch there, runs the tests
// named for it, and records whether a test that runs real parts caught it
// (killed) or none did (survived), which tests did, and how long it took.
// First it runs the same tests on a scratch copy without any patch, which
// must pass. It writes test/mutants/results.json and fails when the tree
// without mutants fails a test, or a mutant survives.
//
// MUTANTS=name1,name2 runs those mutants only; MUTANTS_SOAK=0 leaves the
// soak's runs out (they take minutes each). KUBEBUILDER_ASSETS must name the
// API server's binaries (hack/envtest-assets.sh).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/kmaint/kmaint/test/mutants"
	"github.com/kmaint/kmaint/test/repo"
)

// Result is results.json.
type Result struct {
	Command string `json:"command"`
	// Commit is the checkout's commit, with "-dirty" when its work tree
	// differs from it (results.json itself aside).
	Commit string    `json:"commit"`
	Date   time.Time `json:"date"`
	Go     string    `json:"go"`
	Cores  int       `json:"cores"`
	// Only names the mutants run when not all were (MUTANTS).
	Only []string `json:"only,omitempty"`
	// SoakLeftOut is true when the soak's runs were left out
	// (MUTANTS_SOAK=0).
	SoakLeftOut bool      `json:"soakLeftOut,omitempty"`
	Baseline    Baseline  `json:"baseline"`
	Mutants     []Outcome `json:"mutants"`
	// Survived names the mutants no real-parts test caught.
	Survived []string `json:"survived"`
	Seconds  float64  `json:"seconds"`
}

// Baseline is the run of every named test on the tree without mutants.
type Baseline struct {
	Passed  bool     `json:"passed"`
	Failed  []string `json:"failed,omitempty"`
	Seconds float64  `json:"seconds"`
}

// Outcome is one mutant's run.
type Outcome struct {
	Mutant    string `json:"mutant"`
	Invariant int    `json:"invariant"`
	Promise   string `json:"promise"`
	Killed    bool   `json:"killed"`
	// KilledBy are the real-parts tests that failed with the mutant
	// applied, as "package Test".
	KilledBy []string `json:"killedBy"`
	// UnitKilledBy are the unit tests that failed too.
	UnitKilledBy []string `json:"unitKilledBy,omitempty"`
	// NotKilledBy are the named tests that passed all the same.
	NotKilledBy []string `json:"notKilledBy,omitempty"`
	// Error says why the mutant could not be tried (the patch does not
	// apply, the tree does not build); it then counts as survived.
	Error   string  `json:"error,omitempty"`
	Seconds float64 `json:"seconds"`
}

func main() {
	out := flag.String("results", filepath.Join(mutants.Dir, "results.json"), "where the result goes, relative to the root")
	logs := flag.String("logs", filepath.Join("bin", "mutants"), "where each go test's output goes, relative to the root")
	flag.Parse()
	if err := run(*out, *logs); err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		os.Exit(1)
	}
}

func run(out, logs string) error {
	root := repo.Root()
	started := time.Now()
	all, err := mutants.Load(filepath.Join(root, mutants.Dir))
	if err != nil {
		return err
	}
	res := Result{Command: "make mutants", Date: started.UTC(), Go: runtime.Version(), Cores: runtime.NumCPU()}
	if res.Commit, err = commit(root, filepath.Join(mutants.Dir, "results.json")); err != nil {
		return err
	}
	if only := os.Getenv("MUTANTS"); only != "" {
		res.Only = strings.Split(only, ",")
		res.Command += " MUTANTS=" + only
		for _, name := range res.Only {
			if !slices.ContainsFunc(all, func(m mutants.Mutant) bool { return m.Name == name }) {
				return fmt.Errorf("MUTANTS names %s, which is no mutant of %s", name, mutants.IndexFile)
			}
		}
		all = slices.DeleteFunc(all, func(m mutants.Mutant) bool { return !slices.Contains(res.Only, m.Name) })
	}
	if os.Getenv("MUTANTS_SOAK") == "0" {
		res.SoakLeftOut = true
		res.Command += " MUTANTS_SOAK=0"
		for i := range all {
			all[i].Killers = slices.DeleteFunc(slices.Clone(all[i].Killers), mutants.Tests.Soak)
			all[i].Unit = slices.DeleteFunc(slices.Clone(all[i].Unit), mutants.Tests.Soak)
		}
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return errors.New("KUBEBUILDER_ASSETS is not set: run make mutants, or set it to hack/envtest-assets.sh bin's answer")
	}
	logDir := filepath.Join(root, logs)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "kmaint-mutants-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// The tree without mutants passes every test named.
	var groups []mutants.Tests
	for _, m := range all {
		groups = merge(groups, slices.Concat(m.Killers, m.Unit))
	}
	fmt.Printf("mutants: the tree without mutants, %d test groups\n", len(groups))
	t0 := time.Now()
	failed, err := runGroups(root, filepath.Join(tmp, "baseline"), "", groups, filepath.Join(logDir, "baseline"))
	res.Baseline = Baseline{Passed: err == nil && len(failed) == 0, Failed: failed, Seconds: since(t0)}
	if err != nil {
		res.Baseline.Failed = append(res.Baseline.Failed, err.Error())
	}
	if !res.Baseline.Passed {
		fmt.Printf("mutants: the tree without mutants fails: %s\n", strings.Join(res.Baseline.Failed, "; "))
	} else {
		fmt.Printf("mutants: the tree without mutants passes (%.0fs)\n", res.Baseline.Seconds)
		for _, m := range all {
			o := try(root, tmp, logDir, m)
			res.Mutants = append(res.Mutants, o)
			if !o.Killed {
				res.Survived = append(res.Survived, m.Name)
			}
		}
	}
	res.Seconds = since(started)
	if res.Survived == nil {
		res.Survived = []string{}
	}
	if err := write(filepath.Join(root, out), res); err != nil {
		return err
	}
	fmt.Printf("mutants: %d run, %d survived, in %.0fs; result in %s, go test's output in %s\n", len(res.Mutants), len(res.Survived), res.Seconds, out, logs)
	switch {
	case !res.Baseline.Passed:
		return errors.New("the tree without mutants fails the tests named to catch them")
	case len(res.Survived) > 0:
		return fmt.Errorf("survived, caught by no test that runs real parts: %s", strings.Join(res.Survived, ", "))
	}
	return nil
}

// try runs one mutant.
func try(root, tmp, logDir string, m mutants.Mutant) Outcome {
	t0 := time.Now()
	o := Outcome{Mutant: m.Name, Invariant: m.Invariant, Promise: m.Promise, KilledBy: []string{}}
	patch := filepath.Join(root, mutants.Dir, m.Patch())
	failed, err := runGroups(root, filepath.Join(tmp, m.Name), patch, slices.Concat(m.Killers, m.Unit), filepath.Join(logDir, m.Name))
	if err != nil {
		o.Error = err.Error()
	}
	for _, ts := range m.Killers {
		for _, name := range ts.Tests {
			switch id := ts.Package + " " + name; {
			case slices.Contains(failed, id):
				o.KilledBy = append(o.KilledBy, id)
			default:
				o.NotKilledBy = append(o.NotKilledBy, id)
			}
		}
	}
	for _, ts := range m.Unit {
		for _, name := range ts.Tests {
			if id := ts.Package + " " + name; slices.Contains(failed, id) {
				o.UnitKilledBy = append(o.UnitKilledBy, id)
			}
		}
	}
	o.Killed = o.Error == "" && len(o.KilledBy) > 0
	o.Seconds = since(t0)
	verdict := "killed by " + strings.Join(o.KilledBy, ", ")
	switch {
	case o.Error != "":
		verdict = "not tried: " + o.Error
	case !o.Killed:
		verdict = "SURVIVED"
	}
	fmt.Printf("mutants: %s (invariant %d): %s (%.0fs)\n", m.Name, m.Invariant, verdict, o.Seconds)
	return o
}

// merge adds groups to all, one group per package and arguments.
func merge(all, groups []mutants.Tests) []mutants.Tests {
	for _, g := range groups {
		i := slices.IndexFunc(all, func(a mutants.Tests) bool {
			return a.Package == g.Package && slices.Equal(a.Args, g.Args)
		})
		if i < 0 {
			all = append(all, mutants.Tests{Package: g.Package, Args: g.Args, Parts: g.Parts})
			i = len(all) - 1
		}
		for _, name := range g.Tests {
			if !slices.Contains(all[i].Tests, name) {
				all[i].Tests = append(all[i].Tests, name)
			}
		}
	}
	return all
}

// runGroups copies the tree into dir, applies patch (none when empty), and
// runs the groups' tests there, a go test per package and arguments. It
// returns the tests that failed, as "package Test"; an error when the
// tests could not be run (the patch does not apply, the package does not
// build). A test binary that failed with no test named failing (a panic in
// TestMain, a timeout) fails each of its tests.
func runGroups(root, dir, patch string, groups []mutants.Tests, logPrefix string) ([]string, error) {
	defer os.RemoveAll(dir)
	if err := mutants.CopyTree(root, dir); err != nil {
		return nil, err
	}
	if patch != "" {
		if err := mutants.Apply(dir, patch, false); err != nil {
			return nil, err
		}
	}
	var failed []string
	var errs []error
	for i, g := range merge(nil, groups) {
		timeout := "15m"
		if g.Soak() {
			timeout = "40m"
		}
		args := append([]string{"test", "-count=1", "-timeout", timeout, "-run", g.Run(), g.Package}, g.Args...)
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, mutants.GoEnv()
		t0 := time.Now()
		output, runErr := cmd.CombinedOutput()
		log := fmt.Sprintf("%s-%d-%s.log", logPrefix, i, strings.ReplaceAll(strings.Trim(g.Package, "./"), "/", "-"))
		_ = os.WriteFile(log, output, 0o644)
		fmt.Printf("mutants:   go %s: %s (%.0fs)\n", strings.Join(args[1:], " "), exitText(runErr), since(t0))
		if runErr == nil {
			continue
		}
		if bytes.Contains(output, []byte("[build failed]")) || bytes.Contains(output, []byte("[setup failed]")) {
			errs = append(errs, fmt.Errorf("%s does not build (%s)", g.Package, log))
			continue
		}
		names := failing(output)
		if len(names) == 0 {
			names = g.Tests
		}
		for _, name := range names {
			failed = append(failed, g.Package+" "+name)
		}
	}
	return failed, errors.Join(errs...)
}

// failing returns the top-level tests go test's output reports failed, or
// running when the binary timed out.
func failing(output []byte) []string {
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^--- FAIL: (\w+)`).FindAllSubmatch(output, -1) {
		names = append(names, string(m[1]))
	}
	if _, running, ok := bytes.Cut(output, []byte("panic: test timed out")); ok {
		if _, list, ok := bytes.Cut(running, []byte("running tests:\n")); ok {
			for _, m := range regexp.MustCompile(`(?m)^\t(\w+) \(`).FindAllSubmatch(list, -1) {
				names = append(names, string(m[1]))
			}
		}
	}
	return names
}

func exitText(err error) string {
	if err == nil {
		return "passed"
	}
	return "failed: " + err.Error()
}

func since(t time.Time) float64 { return time.Since(t).Round(time.Second).Seconds() }

// commit is the checkout's commit, "-dirty" when its work tree differs
// from it, but for the result file.
func commit(root, result string) (string, error) {
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse HEAD: %w", err)
	}
	status, err := exec.Command("git", "-C", root, "status", "--porcelain", "--", ".", ":(exclude)"+result).Output()
	if err != nil {
		return "", fmt.Errorf("git status: %w", err)
	}
	c := strings.TrimSpace(string(head))
	if len(bytes.TrimSpace(status)) > 0 {
		c += "-dirty"
	}
	return c, nil
}

func write(path string, res Result) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
