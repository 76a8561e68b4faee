// Package repo finds the repository's root, for the tests and tools that
// read its files (config/, hack/, bin/) from wherever they run.
package repo

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// module is the module whose go.mod marks the root.
const module = "github.com/kmaint/kmaint"

// Root returns the repository's root directory. A binary built with the
// source's paths finds it from this file's place. One built with -trimpath
// (make test builds so, so that a fresh clone reuses the machine's compiled
// packages) knows only module paths, and looks up from its working
// directory, which go test sets to the package's directory, for the go.mod
// of the module.
func Root() string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Join(filepath.Dir(file), "..", "..")
	}
	wd, err := os.Getwd()
	if err != nil {
		panic(fmt.Sprintf("find the repository's root: %v", err))
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if isRoot(dir) {
			return dir
		}
		if filepath.Dir(dir) == dir {
			panic(fmt.Sprintf("find the repository's root: no go.mod of %s in %s or above it; run from inside the checkout", module, wd))
		}
	}
}

// isRoot tells whether dir holds the module's go.mod (bin/ has a go.mod of
// its own, of another module).
func isRoot(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	first, _, _ := bytes.Cut(data, []byte("\n"))
	return string(bytes.TrimSpace(first)) == "module "+module
}
