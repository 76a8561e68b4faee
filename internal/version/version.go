package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at link time, e.g.
//
//	go build -ldflags "-X github.com/kmaint/kmaint/internal/version.version=v0.3.0 -X github.com/kmaint/kmaint/internal/version.commit=b8dcaf9"
//
// They are unexported so that nothing but the linker writes them.
var (
	version = ""
	commit  = ""
)

// Info is the identity of one build.
type Info struct {
	// Version is the release, `git describe --tags --always --dirty` at build
	// time; "dev" when the build did not stamp one.
	Version string
	// Commit is the commit the binary was built from: the stamped one, else
	// the one `go build` records from git (with "-dirty" when the tree had
	// changes), else "unknown" (e.g. a build from a tree without .git).
	Commit string
	// GoVersion is the Go toolchain that built the binary, e.g. "go1.26.8".
	GoVersion string
}

// Get returns this binary's build identity.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, commit, runtime.Version(), bi)
}

// resolve fills what the linker left unset, so that a plain `go build` or
// `go run` still names its commit.
func resolve(version, commit, goVersion string, bi *debug.BuildInfo) Info {
	if version == "" {
		version = "dev"
	}
	if commit == "" {
		commit = vcsCommit(bi)
	}
	return Info{Version: version, Commit: commit, GoVersion: goVersion}
}

// vcsCommit is the short commit `go build` records when it builds inside a
// git work tree (-buildvcs, on by default); go test and builds outside a work
// tree record none.
func vcsCommit(bi *debug.BuildInfo) string {
	if bi == nil {
		return "unknown"
	}
	var rev string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified {
		rev += "-dirty"
	}
	return rev
}

// String is what --version prints: "kmaint v0.3.0 (b8dcaf9, go1.26.8)".
func (i Info) String() string {
	return fmt.Sprintf("kmaint %s (%s, %s)", i.Version, i.Commit, i.GoVersion)
}
