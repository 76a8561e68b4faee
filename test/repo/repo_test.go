package repo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRootWithAndWithoutSourcePaths builds a program that prints Root, with
// and without -trimpath, and runs it from a folder deep in the checkout:
// both find the same root, the one holding this module's go.mod.
func TestRootWithAndWithoutSourcePaths(t *testing.T) {
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Clean(filepath.Join(here, "..", ".."))
	dir := t.TempDir()
	main := filepath.Join(here, "testdata", "printroot")
	for _, flags := range [][]string{nil, {"-trimpath"}} {
		bin := filepath.Join(dir, "printroot"+strings.Join(flags, ""))
		build := exec.Command("go", append(append([]string{"build"}, flags...), "-o", bin, ".")...)
		build.Dir = main
		build.Env = append(os.Environ(), "GOFLAGS=")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", flags, err, out)
		}
		run := exec.Command(bin)
		run.Dir = filepath.Join(want, "api", "v1alpha1") // not the package's own folder
		out, err := run.Output()
		if err != nil {
			t.Fatalf("run %s: %v", bin, err)
		}
		if got := filepath.Clean(strings.TrimSpace(string(out))); got != want {
			t.Errorf("built with %v: Root() = %s, want %s", flags, got, want)
		}
	}
}
