package cli

import (
	"bytes"
	"context"
	"regexp"
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
