// Package version names the kmaint build a binary came from: the release
// (git describe) and commit that `make build` and the Dockerfile stamp in with
// -ldflags -X, and the Go toolchain that built it.
package version
