package bench

import (
	"os"
	"strings"

	"github.com/kmaint/kmaint/test/bench/provenance"
	"github.com/kmaint/kmaint/test/testbed"
)

// commandEnv is where make bench puts the command a person typed, e.g.
// "make bench BENCH=100:10:2s", so that a result says how to make it again.
const commandEnv = "KMAINT_BENCH_COMMAND"

// benchCommand is the command that runs this benchmark: make bench's, or
// else this test binary's own command line.
func benchCommand() string {
	if c := os.Getenv(commandEnv); c != "" {
		return c
	}
	cmd := "go test " + strings.Join(os.Args[1:], " ")
	if spec := os.Getenv("KMAINT_BENCH"); spec != "" {
		cmd = "KMAINT_BENCH=" + spec + " " + cmd
	}
	return cmd
}

// sourceCommit is the commit the benchmark's code comes from, with "-dirty"
// when the work tree differs from it.
func sourceCommit() (string, error) { return provenance.Commit(testbed.RepoRoot()) }
