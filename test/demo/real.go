package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/realcluster"
	"github.com/kmaint/kmaint/test/realkmaint"
	"github.com/kmaint/kmaint/test/testbed"
)

// The real cluster's two pools, each rebooting one node at a time.
const (
	realHostPool   = "web"
	realConfigPool = "batch"
)

// maxRealNodes bounds --nodes with --cluster=real: each node is a machine
// with systemd, containerd and a kubelet (about 100 MiB and a little CPU).
const maxRealNodes = 8

// runReal runs the demo on a real cluster (test/realcluster): a control
// plane and systemd-nspawn nodes running systemd, containerd and a real
// kubelet, with kmaint installed as a user installs it (its image built from
// the Dockerfile, its Helm chart). Nodes are split over two pools of
// maxUnavailable 1: root on the first node of web runs `kmaint-daemon
// request-reboot` there, and batch rolls out a new config. Every reboot is
// real: the node's systemd reboots it, and its kubelet comes back with a
// new boot ID. The live view, the summary and the report are the simulated
// demo's.
func runReal(ctx context.Context, opts options, out io.Writer) (err error) {
	if opts.Nodes < 2 || opts.Nodes > maxRealNodes {
		return fmt.Errorf("--nodes=%d with --cluster=real: want 2 to %d", opts.Nodes, maxRealNodes)
	}
	cfg := realcluster.Config{Name: opts.ClusterName, Nodes: opts.Nodes, Log: slog.New(slog.NewTextHandler(opts.logs(), nil))}
	if err := realcluster.CanStart(&cfg); err != nil {
		return fmt.Errorf("no real cluster on this machine: %w (make demo-cluster builds its parts; it needs root)", err)
	}
	fmt.Fprintf(out, "kmaint demo on a real cluster: %d nodes (systemd-nspawn machines running systemd, containerd and a kubelet), real reboots\n", opts.Nodes)
	defer fmt.Fprintln(out, "Stopped.")
	fmt.Fprintln(out, "Starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the nodes ...")
	c, err := realcluster.Start(ctx, cfg)
	if err != nil {
		return ignoreEnded(ctx, fmt.Errorf("start the cluster: %w", err))
	}
	defer func() {
		// Killed rather than powered off: nobody watches a demo's nodes
		// shut down, and their kubelets' graceful shutdowns take 20 s.
		fmt.Fprintln(out, "\nStopping the cluster ...")
		if stopErr := c.Kill(context.WithoutCancel(ctx)); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stop the cluster: %w", stopErr))
		}
	}()
	kubeconfig, err := os.ReadFile(c.Kubeconfig())
	if err != nil {
		return err
	}
	// The kubeconfig reaches the API server through this process: no use
	// once it is gone.
	if err := os.WriteFile(opts.KubeconfigOut, kubeconfig, 0o600); err != nil {
		return err
	}
	defer os.Remove(opts.KubeconfigOut)
	fmt.Fprintf(out, "Cluster up. A cluster-admin kubeconfig is in %s; from another terminal:\n", opts.KubeconfigOut)
	fmt.Fprintf(out, "  %s --kubeconfig %s get nodes,maintenancepools,nodemaintenances\n", c.Kubectl(), opts.KubeconfigOut)
	fmt.Fprintf(out, "  %s --kubeconfig %s logs -n %s deploy/kmaint-operator\n", c.Kubectl(), opts.KubeconfigOut, realkmaint.Namespace)

	fmt.Fprintln(out, "Installing kmaint: its image from the Dockerfile (hack/image-tar.sh), then helm install of config/helm/kmaint ...")
	if err := realkmaint.Install(ctx, c, realkmaint.InstallOptions{}); err != nil {
		return ignoreEnded(ctx, err)
	}
	kube, err := realkmaint.Client(c)
	if err != nil {
		return err
	}
	bed := &testbed.Bed{Config: c.RestConfig(), Client: kube, Scheme: kube.Scheme()}
	hosts, batch, err := realPools(ctx, kube, c)
	if err != nil {
		return ignoreEnded(ctx, err)
	}
	w, err := startWatcher(ctx, bed)
	if err != nil {
		return ignoreEnded(ctx, err)
	}
	defer w.stop()

	start := time.Now()
	const reason = "kernel update"
	fmt.Fprintln(out, "Requests:")
	for _, n := range hosts {
		if _, err := requestOnHost(ctx, n, reason); err != nil {
			return ignoreEnded(ctx, err)
		}
	}
	fmt.Fprintf(out, "  host    systemd-run %s request-reboot %q, as root on %s\n", realkmaint.HostCommand, reason, nodeNames(hosts))
	if err := rollOut(ctx, kube, realConfigPool); err != nil {
		return ignoreEnded(ctx, err)
	}
	fmt.Fprintf(out, "  config  MaintenancePool %s: spec.desiredConfig=%s, a rolling reboot of its %d nodes\n", realConfigPool, newConfig, len(batch))
	return finish(ctx, opts, out, w, kube, goal{rollout: len(hosts) + len(batch), nodes: append(realNodeNames(hosts), realNodeNames(batch)...)}, start, nil)
}

// realPools puts the first half of the nodes in pool web and the rest in
// batch, each with maxUnavailable 1, and returns web's first node (the one
// root asks on) and batch's nodes.
func realPools(ctx context.Context, kube client.Client, c *realcluster.Cluster) (hosts, batch []*realcluster.Node, err error) {
	nodes := c.Nodes()
	half := (len(nodes) + 1) / 2
	for i, n := range nodes {
		pool := realHostPool
		if i >= half {
			pool = realConfigPool
			batch = append(batch, n)
		}
		var node corev1.Node
		if err := kube.Get(ctx, types.NamespacedName{Name: n.Name()}, &node); err != nil {
			return nil, nil, err
		}
		patch := client.MergeFrom(node.DeepCopy())
		node.Labels["pool"] = pool
		if err := kube.Patch(ctx, &node, patch); err != nil {
			return nil, nil, fmt.Errorf("label node %s: %w", n.Name(), err)
		}
	}
	for _, name := range []string{realHostPool, realConfigPool} {
		if err := kube.Create(ctx, gen.Pool(name, intstr.FromInt32(1))); err != nil {
			return nil, nil, fmt.Errorf("create pool %s: %w", name, err)
		}
	}
	return nodes[:1], batch, nil
}

var requestID = regexp.MustCompile(`request ([0-9a-f-]{36})`)

// requestOnHost runs `kmaint-daemon request-reboot` as root on the node, as
// a person logged in there would, and returns the request's id.
func requestOnHost(ctx context.Context, n *realcluster.Node, reason string) (string, error) {
	out, err := n.Exec(ctx, "systemd-run", "--wait", "--pipe", "--quiet", "--collect", realkmaint.HostCommand, "request-reboot", reason)
	if err != nil {
		return "", fmt.Errorf("request-reboot on %s: %w: %s", n.Name(), err, out)
	}
	m := requestID.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("request-reboot on %s printed no request id: %s", n.Name(), out)
	}
	return string(m[1]), nil
}

// rollOut sets the pool's desiredConfig to newConfig.
func rollOut(ctx context.Context, kube client.Client, name string) error {
	pool := &v1alpha1.MaintenancePool{}
	if err := kube.Get(ctx, types.NamespacedName{Name: name}, pool); err != nil {
		return fmt.Errorf("get pool %s: %w", name, err)
	}
	base := pool.DeepCopy()
	pool.Spec.DesiredConfig = newConfig
	if err := kube.Patch(ctx, pool, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("roll pool %s to %s: %w", name, newConfig, err)
	}
	return nil
}

func nodeNames(nodes []*realcluster.Node) string {
	return strings.Join(realNodeNames(nodes), ", ")
}

func realNodeNames(nodes []*realcluster.Node) []string {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name()
	}
	return names
}
