package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// asPlugin makes the test binary run main instead of the tests, so the
// tests see the binary as kubectl runs it: its output and exit code.
const asPlugin = "KUBECTL_KMAINT_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asPlugin) != "" {
		os.Args = append([]string{"kubectl-kmaint"}, strings.Fields(os.Getenv(asPlugin))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func plugin(t *testing.T, args string) (string, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), asPlugin+"="+args, "KUBECONFIG=/nonexistent")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestVersion(t *testing.T) {
	out, err := plugin(t, "version")
	if err != nil || !strings.HasPrefix(out, "kubectl-kmaint: kmaint dev (") {
		t.Errorf("version: %q, %v", out, err)
	}
}

func TestErrorExitsNonZero(t *testing.T) {
	out, err := plugin(t, "pause")
	if err == nil {
		t.Fatalf("pause without a pool succeeded: %q", out)
	}
	if want := "error: accepts 1 arg(s), received 0\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
}

func TestHelpSaysWhatEachCommandDoes(t *testing.T) {
	out, err := plugin(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"Usage:\n  kubectl kmaint [command]", "status      Show pools'", "request     Ask kmaint to reboot a node", "rollout", "pause", "resume", "history", "report", "completion"} {
		if !strings.Contains(out, line) {
			t.Errorf("help lacks %q:\n%s", line, out)
		}
	}
}
