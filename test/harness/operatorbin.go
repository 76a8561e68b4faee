package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kmaint/kmaint/test/testbed"
)

// BuildOperator builds kmaint-operator as the image builds it (Dockerfile:
// static, -trimpath, -s -w), for tests that run it as a process of its
// own: its memory and CPU are then its own, and a SIGKILL is a real one.
func BuildOperator(t testing.TB) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "kmaint-operator")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./cmd/kmaint-operator")
	cmd.Dir = testbed.RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build operator: %v\n%s", err, msg)
	}
	return out
}
