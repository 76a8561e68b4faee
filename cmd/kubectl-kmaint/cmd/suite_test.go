package cmd_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/testbed"
)

// bed is the real API server all tests in this package share. Each test
// works in its own pool, with its own nodes.
var bed *testbed.Bed

func TestMain(m *testing.M) {
	// The cancel tests run simulated nodes, whose daemon is this binary.
	harness.MaybeRunDaemon()
	os.Exit(harness.Main(m, &bed))
}

const timeout = 30 * time.Second

var (
	kubeconfigOnce sync.Once
	kubeconfigPath string
)

// kubeconfig writes, once, a kubeconfig of a cluster admin of the bed, for
// the plugin's --kubeconfig.
func kubeconfig(t *testing.T) string {
	t.Helper()
	kubeconfigOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kubectl-kmaint-test")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "kubeconfig")
		if err := bed.WriteKubeconfig(path, "plugin-user", "system:masters"); err != nil {
			t.Fatal(err)
		}
		kubeconfigPath = path
	})
	if kubeconfigPath == "" {
		t.Fatal("no kubeconfig")
	}
	return kubeconfigPath
}

// run runs `kubectl kmaint args...` against the bed, as a person would,
// and returns what it printed.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	root := cmd.NewCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &stdout, ErrOut: &stderr})
	root.SetArgs(append([]string{"--kubeconfig", kubeconfig(t)}, args...))
	err := root.ExecuteContext(context.Background())
	if stderr.Len() > 0 {
		t.Logf("stderr of %v: %s", args, stderr.String())
	}
	return stdout.String(), err
}
