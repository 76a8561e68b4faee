package mutants_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kmaint/kmaint/test/mutants"
	"github.com/kmaint/kmaint/test/repo"
)

// Every mutant's patch applies to the tree as it is and its package builds,
// and every test it names exists: a mutant that no longer
// applies, or a test renamed, would leave an invariant unguarded without
// `make mutants` being run. The patches are applied one after the other to
// one scratch copy, each taken out before the next goes in; the packages a
// patch does not reach come from the build cache.
func TestEveryMutantAppliesAndBuilds(t *testing.T) {
	root := repo.Root()
	dir := filepath.Join(root, mutants.Dir)
	all, err := mutants.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 12 {
		t.Errorf("%d mutants; the design's invariants want at least 12", len(all))
	}
	funcs := map[string][]string{}
	for _, m := range all {
		for _, ts := range slices.Concat(m.Killers, m.Unit) {
			have, ok := funcs[ts.Package]
			if !ok {
				if have, err = mutants.TestFuncs(filepath.Join(root, ts.Package)); err != nil {
					t.Fatal(err)
				}
				funcs[ts.Package] = have
			}
			for _, name := range ts.Tests {
				if !slices.Contains(have, name) {
					t.Errorf("mutant %s names %s %s, which is no test of the package", m.Name, ts.Package, name)
				}
			}
		}
	}

	scratch := t.TempDir()
	if err := mutants.CopyTree(root, scratch); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, m := range all {
		t.Run(m.Name, func(t *testing.T) {
			patch := filepath.Join(dir, m.Patch())
			data, err := os.ReadFile(patch)
			if err != nil {
				t.Fatal(err)
			}
			pkgs := mutants.Touched(data)
			for _, p := range pkgs {
				if !slices.ContainsFunc([]string{"./operator/", "./daemon", "./api/", "./internal/", "./policies"}, func(s string) bool { return strings.HasPrefix(p, s) }) {
					t.Errorf("the patch changes %s: a mutant breaks the product code only", p)
				}
			}
			if err := mutants.Apply(scratch, patch, false); err != nil {
				t.Fatalf("the patch no longer applies; make it again against the code as it is now (test/mutants/README.md): %v", err)
			}
			defer func() {
				if err := mutants.Apply(scratch, patch, true); err != nil {
					t.Fatalf("take the patch out again: %v", err)
				}
			}()
			// A patch changes a package's code, not its tests, nor
			// anything another package sees: that the package builds is
			// what a change of the code can break. (Its tests' binaries
			// are built by make mutants: here they would build again
			// every package between the mutant and its tests, minutes on
			// two cores.)
			cmd := exec.Command("go", append([]string{"build"}, pkgs...)...)
			cmd.Dir, cmd.Env = scratch, mutants.GoEnv()
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("go build %s with the patch applied: %v\n%s", strings.Join(pkgs, " "), err, out)
			}
		})
	}
	t.Logf("%d patches applied and built in %s", len(all), time.Since(start).Round(time.Millisecond))
}
