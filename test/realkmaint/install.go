package realkmaint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/realcluster"
)

// Namespace is where the README installs kmaint; the admission policies
// name the daemon's service account in it.
const Namespace = "kmaint-system"

// HostCommand is where the chart puts kmaint-daemon on each node
// (ci/realcluster-values.yaml: daemon.hostCommandDir).
const HostCommand = "/opt/kmaint/bin/kmaint-daemon"

// InstallOptions say how Install installs kmaint.
type InstallOptions struct {
	// Set are more values, as `helm install --set` takes them (e.g. the
	// Prometheus URL a cluster with RebootPolicies sets).
	Set []string
	// Timeout bounds helm's wait for every pod to be Ready. Default 5m.
	Timeout time.Duration
}

// Install installs kmaint on c as a user would: the image hack/image-tar.sh
// builds from the Dockerfile, imported into every node's containerd (there
// is no registry to pull from), then `helm install` of config/helm/kmaint
// into Namespace with the test bed's values, waiting until every pod is
// Ready.
func Install(ctx context.Context, c *realcluster.Cluster, opts InstallOptions) error {
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Minute
	}
	root := realcluster.RepoRoot()
	tarball, err := buildImage(ctx, filepath.Join(root, "bin"), nil)
	if err != nil {
		return err
	}
	if err := importEverywhere(ctx, c, tarball); err != nil {
		return err
	}
	helm, err := helmBinary()
	if err != nil {
		return err
	}
	chart := filepath.Join(root, "config", "helm", "kmaint")
	args := []string{"install", "kmaint", chart,
		"--kubeconfig", c.Kubeconfig(), "--namespace", Namespace, "--create-namespace",
		"--values", filepath.Join(chart, "ci", "realcluster-values.yaml"),
		"--wait", "--timeout", opts.Timeout.String()}
	for _, s := range opts.Set {
		args = append(args, "--set", s)
	}
	if out, err := exec.CommandContext(ctx, helm, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("helm install: %w: %s", err, out)
	}
	return nil
}

// buildImage builds kmaint's image with hack/image-tar.sh, linked under
// binDir, with env added to the script's (IMAGE_NAME, VERSION), and returns
// its tarball.
func buildImage(ctx context.Context, binDir string, env []string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(realcluster.RepoRoot(), "hack", "image-tar.sh"), binDir)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "", fmt.Errorf("build kmaint's image (hack/image-tar.sh): %w: %s", err, exit.Stderr)
		}
		return "", fmt.Errorf("build kmaint's image (hack/image-tar.sh): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// importEverywhere imports the image tarball into every node's containerd,
// all at once: each node's containerd unpacks it alone.
func importEverywhere(ctx context.Context, c *realcluster.Cluster, tarball string) error {
	errs := make([]error, len(c.Nodes()))
	var wg sync.WaitGroup
	for i, n := range c.Nodes() {
		wg.Go(func() { errs[i] = importImage(ctx, n, tarball) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// helmBinary is the helm make helm builds.
func helmBinary() (string, error) {
	helm, err := filepath.Glob(filepath.Join(realcluster.RepoRoot(), "bin", "helm", "*", "helm"))
	if err != nil || len(helm) == 0 {
		return "", errors.New("no helm under bin/helm (make helm builds it)")
	}
	return helm[0], nil
}

func importImage(ctx context.Context, n *realcluster.Node, tarball string) error {
	f, err := os.Open(tarball)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := n.ImportImage(ctx, f); err != nil {
		return fmt.Errorf("import kmaint's image into %s: %w", n.Name(), err)
	}
	return nil
}

// Client is a cluster admin's client of c that knows kmaint's kinds and
// CustomResourceDefinitions.
func Client(c *realcluster.Cluster) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(c.RestConfig(), client.Options{Scheme: scheme})
}
