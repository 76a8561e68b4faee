package alertwebhook_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// The real API server of the SecretToken tests, started by the first test
// that needs it, so that the handler's tests run without one. It is plain
// envtest with the binaries test/testbed uses, not test/testbed itself:
// Secrets need none of kmaint's CRDs, and testbed imports the whole operator,
// which would make this package's tests fail to build whenever a controller
// package does.
var (
	envOnce sync.Once
	env     *envtest.Environment
	apiC    client.Client
	envErr  error
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	code := m.Run()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// apiServer returns a direct client of the shared API server, starting it on
// first use. A missing kube-apiserver fails the test rather than skipping it.
func apiServer(t *testing.T) client.Client {
	t.Helper()
	envOnce.Do(func() {
		var assets string
		assets, envErr = assetsDir()
		if envErr != nil {
			return
		}
		e := &envtest.Environment{BinaryAssetsDirectory: assets}
		cfg, err := e.Start()
		if err != nil {
			envErr = fmt.Errorf("start envtest from %s: %w", assets, err)
			return
		}
		env = e
		apiC, envErr = client.New(cfg, client.Options{Scheme: scheme.Scheme})
	})
	if envErr != nil {
		t.Fatalf("API server: %v", envErr)
	}
	return apiC
}

// assetsDir finds kube-apiserver and etcd as test/testbed does:
// KUBEBUILDER_ASSETS, else the newest build cached under bin/k8s.
func assetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	matches, _ := filepath.Glob(filepath.Join(root, "bin", "k8s", "*", "kube-apiserver"))
	if len(matches) == 0 {
		return "", errors.New("no kube-apiserver: set KUBEBUILDER_ASSETS or run hack/envtest-assets.sh (make test does)")
	}
	return filepath.Dir(matches[len(matches)-1]), nil
}
