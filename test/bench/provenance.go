package bench

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

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
// when the work tree differs from it. Results themselves are left out of
// the comparison: writing one must not make the next scenario's "dirty".
func sourceCommit() (string, error) {
	root := testbed.RepoRoot()
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse HEAD: %w", err)
	}
	status, err := exec.Command("git", "-C", root, "status", "--porcelain", "--", ".", ":(exclude)test/bench/results").Output()
	if err != nil {
		return "", fmt.Errorf("git status: %w", err)
	}
	commit := strings.TrimSpace(string(head))
	if len(strings.TrimSpace(string(status))) > 0 {
		commit += "-dirty"
	}
	return commit, nil
}
