package realcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is a running cluster.
type Cluster struct {
	cfg  Config
	net  network
	pki  *pki
	hier []hierarchy

	root    *cgroupSet // every process of the cluster is below it
	control *cgroupSet // the namespaces' holder and the control plane
	execs   *cgroupSet // commands run in nodes (Exec)
	ns      *namespaces
	nsInode uint64
	dial    *dialer
	proxy   *proxy

	exposedMu sync.Mutex
	exposed   []*proxy // Expose's forwarders, closed by Stop
	stopped   bool

	restConfig *rest.Config
	clientset  kubernetes.Interface
	processes  []*process
	nodes      []*Node
	// lock is the machine's cluster lock, held until Stop.
	lock *os.File
}

// cgroupName is the cluster's cgroup below this process's in every
// hierarchy.
func cgroupName(name string) string { return "kmaint-realcluster-" + name }

// cgroupsFile lists, in the state directory, the cluster's cgroup
// directories, so that a later run can kill and remove what a killed run
// left even from another cgroup.
const cgroupsFile = "cgroups"

// Start starts a cluster and waits for every node to be Ready. On error
// nothing of it is left running. It needs root.
func Start(ctx context.Context, cfg Config) (_ *Cluster, reterr error) {
	if err := CanStart(&cfg); err != nil {
		return nil, err
	}
	lock, err := lockMachine(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := Cleanup(ctx, cfg.Name, cfg.StateDir); err != nil {
		lock.Close()
		return nil, fmt.Errorf("clean up an earlier run: %w", err)
	}
	c := &Cluster{cfg: cfg, net: clusterNetwork(), lock: lock}
	defer func() {
		if reterr != nil {
			reterr = errors.Join(reterr, c.Stop(context.WithoutCancel(ctx)))
		}
	}()
	start := time.Now()
	if err := c.setUp(); err != nil {
		return c, err
	}
	if err := c.startControlPlane(ctx); err != nil {
		return c, err
	}
	cfg.Log.Info("Control plane ready", "cluster", cfg.Name, "after", time.Since(start).Round(time.Millisecond))
	for i := 1; i <= cfg.Nodes; i++ {
		if err := c.startNode(ctx, i); err != nil {
			return c, err
		}
	}
	if err := c.waitNodesReady(ctx, cfg.ReadyTimeout); err != nil {
		return c, err
	}
	cfg.Log.Info("Nodes Ready", "cluster", cfg.Name, "nodes", cfg.Nodes, "after", time.Since(start).Round(time.Millisecond))
	return c, nil
}

// CanStart checks what Start needs of the machine (root, the tools, the
// built assets) and fills in cfg's defaults. Its errors satisfy
// IsMissingPrerequisite.
func CanStart(cfg *Config) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: the cluster needs root (namespaces, cgroups, mounts)", errMissing)
	}
	for _, tool := range []string{"systemd-nspawn", "nsenter", "unshare", "ip", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: no %s (hack/install-test-deps.sh installs it)", errMissing, tool)
		}
	}
	if err := cfg.setDefaults(); err != nil {
		return fmt.Errorf("%w: %w", errMissing, err)
	}
	return nil
}

// setUp makes the state directory, certificates, cgroups, namespaces and
// the host's way in.
func (c *Cluster) setUp() error {
	cfg := c.cfg
	for _, d := range []string{"logs", "nodes"} {
		if err := os.MkdirAll(filepath.Join(cfg.StateDir, d), 0o755); err != nil {
			return err
		}
	}
	var err error
	if c.pki, err = newPKI(filepath.Join(cfg.StateDir, "pki")); err != nil {
		return err
	}
	if err := c.issueCertificates(); err != nil {
		return err
	}
	if c.hier, err = hierarchies(); err != nil {
		return err
	}
	rootName := cgroupName(cfg.Name)
	if c.root, err = newCgroupSet(c.hier, rootName); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.StateDir, cgroupsFile), []byte(strings.Join(c.root.dirs, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	if c.control, err = newCgroupSet(c.hier, rootName+"/control"); err != nil {
		return err
	}
	if c.execs, err = newCgroupSet(c.hier, rootName+"/exec"); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(cfg.StateDir, "logs", "namespaces.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	if c.ns, err = startNamespaces(c.control, c.net, logFile); err != nil {
		return err
	}
	if c.nsInode, err = c.ns.netnsInode(); err != nil {
		return err
	}
	if c.dial, err = newDialer(c.ns); err != nil {
		return err
	}
	if c.proxy, err = startProxy(c.dial, c.net.gateway+":"+apiserverPort); err != nil {
		return err
	}
	crt, key, err := c.pki.issue("admin", identity{cn: "kmaint-realcluster-admin", orgs: []string{"system:masters"}})
	if err != nil {
		return err
	}
	kc := kubeconfig("https://"+c.proxy.addr(), c.pki.caPEM(), crt, key)
	if err := os.WriteFile(c.Kubeconfig(), kc, 0o600); err != nil {
		return err
	}
	if c.restConfig, err = clientcmd.RESTConfigFromKubeConfig(kc); err != nil {
		return err
	}
	c.restConfig.QPS, c.restConfig.Burst = 50, 100
	c.clientset, err = kubernetes.NewForConfig(c.restConfig)
	return err
}

func (c *Cluster) startNode(ctx context.Context, i int) error {
	name := fmt.Sprintf("node-%d", i)
	cg, err := newCgroupSet(c.hier, cgroupName(c.cfg.Name)+"/"+name)
	if err != nil {
		return err
	}
	n := &Node{name: name, index: i, dir: filepath.Join(c.cfg.StateDir, "nodes", name), c: c, cg: cg, done: make(chan struct{}), stopping: make(chan struct{})}
	if err := n.prepare(ctx); err != nil {
		return err
	}
	c.nodes = append(c.nodes, n)
	go n.supervise()
	return nil
}

// waitNodesReady waits until every node is Ready.
func (c *Cluster) waitNodesReady(ctx context.Context, timeout time.Duration) error {
	var notReady []string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		notReady = notReady[:0]
		for _, n := range c.nodes {
			select {
			case <-n.done:
				return false, fmt.Errorf("node %s stopped (see %s)", n.name, filepath.Join(n.dir, "logs"))
			default:
			}
			node, err := c.clientset.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
			switch {
			case err != nil:
				notReady = append(notReady, fmt.Sprintf("%s (%v)", n.name, err))
			case !NodeReady(node):
				notReady = append(notReady, fmt.Sprintf("%s (%s)", n.name, readyMessage(node)))
			}
		}
		return len(notReady) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("wait for nodes to be Ready (not Ready: %s): %w", strings.Join(notReady, ", "), err)
	}
	return nil
}

// readyMessage is what the node's Ready condition says, the kubelet's own
// words on why it is not Ready.
func readyMessage(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
		}
	}
	return "no Ready condition yet"
}

// NodeReady tells whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Nodes are the cluster's worker nodes.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Node returns the node of that name, or nil.
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

// RestConfig reaches the API server from the host as a cluster admin.
func (c *Cluster) RestConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Kubeconfig is the path of a kubeconfig that reaches the API server from
// the host as a cluster admin (kubectl, helm).
func (c *Cluster) Kubeconfig() string { return filepath.Join(c.cfg.StateDir, "admin.kubeconfig") }

// Kubectl is the kubectl built with the API server.
func (c *Cluster) Kubectl() string { return filepath.Join(c.cfg.KubeAssets, "kubectl") }

// Images lists the image tarballs every node imports at boot.
func (c *Cluster) Images() string { return filepath.Join(c.cfg.ClusterAssets, "images") }

// run runs argv on the host and returns its combined output.
func (c *Cluster) run(ctx context.Context, argv ...string) ([]byte, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// MemoryBytes is the memory the whole cluster uses now (its memory
// cgroup's usage: processes and page cache), or 0 when unknown.
func (c *Cluster) MemoryBytes() uint64 {
	return c.memory("memory.usage_in_bytes", "memory.current")
}

// PeakMemoryBytes is the most memory the whole cluster has used, or 0 when
// unknown.
func (c *Cluster) PeakMemoryBytes() uint64 {
	return c.memory("memory.max_usage_in_bytes", "memory.peak")
}

// memory reads the first of files found in the cluster's memory cgroup.
func (c *Cluster) memory(files ...string) uint64 {
	for _, d := range c.root.dirs {
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(d, f))
			if err != nil {
				continue
			}
			var v uint64
			if _, err := fmt.Sscan(string(b), &v); err == nil {
				return v
			}
		}
	}
	return 0
}
