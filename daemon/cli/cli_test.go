package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
