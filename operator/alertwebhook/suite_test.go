package alertwebhook_test

import (
	"fmt"
	"os"
	"sync"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kmaint/kmaint/test/testbed"
)

// The real API server of the SecretToken tests, started by the first test
// that needs it, so that the handler's tests run without one.
var (
	envOnce sync.Once
	bed     *testbed.Bed
	envErr  error
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	code := m.Run()
	if bed != nil {
		if err := bed.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// apiServer returns a direct client of the shared API server, starting it on
// first use. A missing kube-apiserver fails the test rather than skipping it.
func apiServer(t *testing.T) client.Client {
	t.Helper()
	envOnce.Do(func() { bed, envErr = testbed.Start() })
	if envErr != nil {
		t.Fatalf("API server: %v", envErr)
	}
	return bed.Client
}
