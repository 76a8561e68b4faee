package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionFlag builds the operator the way `make build` and the
// Dockerfile do, stamping the version with -ldflags -X, and asks it. It fails
// if the variable's import path or name drifts from what the build passes.
func TestVersionFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the operator")
	}
	bin := filepath.Join(t.TempDir(), "kmaint-operator")
	const pkg = "github.com/kmaint/kmaint/internal/version"
	build := exec.Command("go", "build", "-o", bin,
		"-ldflags", "-X "+pkg+".version=v9.8.7-test -X "+pkg+".commit=0123456789ab", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("kmaint-operator --version: %v\n%s", err, out)
	}
	got := strings.TrimSpace(string(out))
	if want := "kmaint v9.8.7-test (0123456789ab, go"; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, ")") {
		t.Errorf("kmaint-operator --version = %q, want %q...)", got, want)
	}
}
