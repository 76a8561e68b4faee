package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kmaint/kmaint/api/scheme"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/repo"
)

// Bed is a running API server with kmaint's CRDs.
type Bed struct {
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Client is a direct (uncached) client with kmaint's scheme.
	Client client.Client
	// Scheme knows the built-in types and kmaint's.
	Scheme *apiruntime.Scheme

	env    *envtest.Environment
	reaper *reaper

	// restartMu guards restarted, the kube-apiserver RestartAPIServer
	// started in place of envtest's.
	restartMu sync.Mutex
	restarted *apiServerRestart
}

// RepoRoot returns the repository's root directory, so that tests in any
// package can find config/ and bin/ (repo.Root).
func RepoRoot() string { return repo.Root() }

// AssetsDir finds kube-apiserver, etcd and kubectl: KUBEBUILDER_ASSETS when
// set, else the newest build that hack/envtest-assets.sh cached under bin/k8s.
func AssetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	matches, _ := filepath.Glob(filepath.Join(RepoRoot(), "bin", "k8s", "*", "kube-apiserver"))
	if len(matches) == 0 {
		return "", errors.New("no kube-apiserver: set KUBEBUILDER_ASSETS or run hack/envtest-assets.sh (make test does)")
	}
	return filepath.Dir(matches[len(matches)-1]), nil
}

// Kubectl returns the kubectl built with the API server, the one whose
// `kubectl kustomize` and `kubectl apply --server-side` make deploy runs.
func Kubectl() (string, error) {
	dir, err := AssetsDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "kubectl")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no kubectl beside kube-apiserver: %w (hack/envtest-assets.sh builds one; make test runs it)", err)
	}
	return p, nil
}

// Start starts etcd and kube-apiserver and installs kmaint's CRDs.
func Start(opts ...Option) (*Bed, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	s, err := scheme.New()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                s,
		// On a shared, busy machine kube-apiserver can take longer than
		// envtest's default 20s to start; a slow start is not a failure.
		ControlPlaneStartTimeout: 2 * time.Minute,
	}
	// Test data need not survive a crash: without fsync, etcd does not
	// stall behind the disk when several test packages write at once (a
	// stall of seconds shows up as a controller that seems stuck).
	env.ControlPlane.Etcd = &envtest.Etcd{}
	env.ControlPlane.Etcd.Configure().Append("unsafe-no-fsync", "true")
	// etcd refuses every write once its database reaches the quota (2 GiB
	// by default). The 5000-node benchmark holds 100,000 pods, 60,000
	// NodeMaintenances and their old revisions until the API server's
	// compaction; a full database would read as kmaint failing.
	env.ControlPlane.Etcd.Configure().Append("quota-backend-bytes", strconv.FormatInt(8<<30, 10))
	for _, opt := range opts {
		if err := opt(env); err != nil {
			return nil, err
		}
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest from %s: %w", assets, err)
	}
	// Tests create many objects quickly; the default client-side limit of
	// 5 QPS would make them measure the rate limiter.
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("client: %w", err), env.Stop())
	}
	r, err := startReaper("kube-apiserver", "etcd")
	if err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	return &Bed{Config: cfg, Client: c, Scheme: s, env: env, reaper: r}, nil
}

// Stop stops the API server and etcd.
func (b *Bed) Stop() error {
	if err := b.stopRestarted(); err != nil {
		return err
	}
	err := b.env.Stop()
	if err != nil {
		return err // the reaper stops them when this process ends
	}
	return b.reaper.disarm()
}

// GVK returns the group, version and kind of a kmaint kind.
func GVK(kind string) schema.GroupVersionKind {
	return v1alpha1.GroupVersion.WithKind(kind)
}

// Kubeconfig returns a kubeconfig for a new user of the API server, for
// processes the tests start (daemons on simulated nodes).
func (b *Bed) Kubeconfig(user string, groups ...string) ([]byte, error) {
	u, err := b.env.ControlPlane.AddUser(envtest.User{Name: user, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("add user %s: %w", user, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig of user %s: %w", user, err)
	}
	return kc, nil
}

// WriteKubeconfig writes Kubeconfig's kubeconfig to path, readable by its
// owner only, for a process that takes a --kubeconfig.
func (b *Bed) WriteKubeconfig(path, user string, groups ...string) error {
	kc, err := b.Kubeconfig(user, groups...)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig of user %s: %w", user, err)
	}
	return nil
}
