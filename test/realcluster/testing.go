package realcluster

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
)

// Require stops t when this machine cannot run cfg's cluster: a skip on a
// developer's machine, a failure under CI (CI set), where a skip would hide
// the only tests on real kubelets and real reboots. make test builds what
// the cluster needs, so under CI a failure here is a missing install step.
func Require(t testing.TB, cfg Config) {
	t.Helper()
	err := CanStart(&cfg)
	if err == nil {
		return
	}
	if os.Getenv("CI") == "" {
		t.Skipf("the real cluster cannot run here: %v", err)
	}
	t.Fatalf("the real cluster cannot run here, and CI must run it: %v", err)
}

// TestLog is a logger for Config.Log that writes to t's log.
func TestLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(TestLogWriter(t), nil))
}

// TestLogWriter writes each line to t's log.
func TestLogWriter(t testing.TB) io.Writer { return testWriter{t} }

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
