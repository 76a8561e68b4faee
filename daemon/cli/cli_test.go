package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestVersion(t *testing.T) {
	// Unstamped under go test; the format is version.Info.String's.
	want := regexp.MustCompile(`^kmaint dev \([^,]+, go[^)]+\)\n$`)
	for _, arg := range []string{"version", "--version", "-version"} {
		t.Run(arg, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), []string{arg}, &stdout, &stderr, Hooks{})
			if code != 0 || !want.MatchString(stdout.String()) || stderr.Len() != 0 {
				t.Errorf("kmaint-daemon %s = %d, stdout %q, stderr %q; want 0 and stdout matching %s", arg, code, stdout.String(), stderr.String(), want)
			}
		})
	}
}

// install-host-command puts this very binary in the directory, and says
// so; a second run finds it there and changes nothing.
func TestInstallHostCommand(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"Installed " + filepath.Join(dir, "kmaint-daemon"), "is already this command"} {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), []string{"install-host-command", dir}, &stdout, &stderr, Hooks{}); code != 0 {
			t.Fatalf("run %d: exit %d: %s", i, code, stderr.String())
		}
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("run %d said %q, want %q", i, stdout.String(), want)
		}
	}
	got, err := os.ReadFile(filepath.Join(dir, "kmaint-daemon"))
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, have) {
		t.Error("the installed command is not this binary")
	}

	for _, args := range [][]string{{}, {dir, "extra"}} {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), append([]string{"install-host-command"}, args...), &stdout, &stderr, Hooks{}); code != 2 {
			t.Errorf("install-host-command %q: exit %d, want 2 (usage)", args, code)
		}
	}
	var stdout, stderr bytes.Buffer
	missing := filepath.Join(dir, "missing")
	if code := Main(context.Background(), []string{"install-host-command", missing}, &stdout, &stderr, Hooks{}); code != 1 || !strings.Contains(stderr.String(), missing) {
		t.Errorf("install-host-command into a missing directory: exit %d, %q; want 1 naming it", code, stderr.String())
	}
}

// watch-sentinel refuses a call that names no file or report, or an
// interval out of bounds, and serves probes that say when it last reported.
func TestWatchSentinel(t *testing.T) {
	for _, args := range [][]string{{}, {"--file=/f"}, {"--report=/r"}, {"--file=/f", "--report=/r", "--interval=1ms"}, {"--file=/f", "--report=/r", "extra"}} {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), append([]string{"watch-sentinel"}, args...), &stdout, &stderr, Hooks{}); code != 2 {
			t.Errorf("watch-sentinel %q: exit %d, want 2 (usage): %s", args, code, stderr.String())
		}
	}
	dir := t.TempDir()
	report := filepath.Join(dir, "report.json")
	probes := sentinelProbes(report, time.Minute)
	get := func(path string) int {
		rec := httptest.NewRecorder()
		probes.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code
	}
	if get("/readyz") != http.StatusServiceUnavailable || get("/healthz") != http.StatusOK {
		t.Errorf("before the first report: readyz %d, healthz %d; want 503 and 200 (the first look may take a while)", get("/readyz"), get("/healthz"))
	}
	if err := os.WriteFile(report, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if get("/readyz") != http.StatusOK || get("/healthz") != http.StatusOK {
		t.Errorf("a fresh report: readyz %d, healthz %d; want 200", get("/readyz"), get("/healthz"))
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(report, old, old); err != nil {
		t.Fatal(err)
	}
	if get("/healthz") != http.StatusServiceUnavailable {
		t.Errorf("a report an hour old: healthz %d, want 503", get("/healthz"))
	}
}
