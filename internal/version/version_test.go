package version

import (
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResolve(t *testing.T) {
	vcs := func(settings ...debug.BuildSetting) *debug.BuildInfo { return &debug.BuildInfo{Settings: settings} }
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "b8dcaf9e1f2a3b4c5d6e7f8091a2b3c4d5e6f708"}
	tests := map[string]struct {
		version, commit string // what the linker set
		bi              *debug.BuildInfo
		// want is the resolved identity; GoVersion is always "go1.26.8".
		want Info
	}{
		"stamped by the linker": {
			version: "v0.3.0-2-gb8dcaf9", commit: "b8dcaf9e1f2a", bi: vcs(rev),
			want: Info{Version: "v0.3.0-2-gb8dcaf9", Commit: "b8dcaf9e1f2a"},
		},
		"not stamped, no build info": {
			want: Info{Version: "dev", Commit: "unknown"},
		},
		"not stamped, built outside git (e.g. go test)": {
			bi:   vcs(debug.BuildSetting{Key: "GOOS", Value: "linux"}),
			want: Info{Version: "dev", Commit: "unknown"},
		},
		"commit from go build's vcs stamp, shortened": {
			bi:   vcs(rev, debug.BuildSetting{Key: "vcs.modified", Value: "false"}),
			want: Info{Version: "dev", Commit: "b8dcaf9e1f2a"},
		},
		"vcs stamp of a modified tree": {
			bi:   vcs(rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"}),
			want: Info{Version: "dev", Commit: "b8dcaf9e1f2a-dirty"},
		},
		"version stamped, commit from vcs": {
			version: "v0.3.0", bi: vcs(rev),
			want: Info{Version: "v0.3.0", Commit: "b8dcaf9e1f2a"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			tt.want.GoVersion = "go1.26.8"
			got := resolve(tt.version, tt.commit, "go1.26.8", tt.bi)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("resolve() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestString(t *testing.T) {
	got := Info{Version: "v0.3.0", Commit: "b8dcaf9e1f2a", GoVersion: "go1.26.8"}.String()
	if want := "kmaint v0.3.0 (b8dcaf9e1f2a, go1.26.8)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// Under go test nothing is stamped, so Get reports a development build; the
// ldflags path is tested by building kmaint-operator (cmd/kmaint-operator).
func TestGetUnstamped(t *testing.T) {
	got := Get()
	if got.Version != "dev" || got.Commit == "" || got.GoVersion == "" {
		t.Errorf("Get() = %+v, want Version dev and a Commit and GoVersion", got)
	}
}
