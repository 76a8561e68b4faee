package realcluster

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"github.com/kmaint/kmaint/test/repo"
)

// Config describes a cluster.
type Config struct {
	// Name tells clusters apart: their cgroups, state directory and
	// leftovers. Two clusters of one name cannot run at once; starting one
	// cleans up what a killed run of that name left. Default "kmaint".
	Name string
	// Nodes is the number of worker nodes, named node-1, node-2, ...
	// Default 3.
	Nodes int
	// StateDir holds the cluster's files (certificates, etcd's data, each
	// node's overlay and logs); it is emptied at start. Default
	// /var/tmp/kmaint-realcluster/NAME, a fixed place so that the next run
	// finds a killed run's leftovers.
	StateDir string
	// KubeAssets holds kube-apiserver, etcd and kubectl
	// (hack/envtest-assets.sh). Default: KUBEBUILDER_ASSETS, else the
	// newest bin/k8s/*.
	KubeAssets string
	// ClusterAssets holds kubelet, kube-controller-manager, kube-scheduler
	// and images/*.tar (hack/cluster-assets.sh). Default: REALCLUSTER_ASSETS,
	// else the newest bin/cluster/*.
	ClusterAssets string
	// NodeRootfs is the nodes' root file system (hack/node-rootfs.sh).
	// Default: REALCLUSTER_ROOTFS, else the newest bin/node-rootfs/*.
	NodeRootfs string
	// NodeBinds are extra read-only bind mounts into every node, as
	// "HOST_PATH:NODE_PATH".
	NodeBinds []string
	// ReadyTimeout bounds the wait for every node to be Ready. Default 5m.
	ReadyTimeout time.Duration
	// Log receives the cluster's progress; the processes' own output goes
	// to files under StateDir. Default: discarded.
	Log *slog.Logger

	keepState bool
}

// validName is what a cluster's name may be.
var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// checkName refuses a name that could not safely be a directory under
// stateRoot, which a Start empties and a Stop or Cleanup removes, and a
// cgroup's name: a slash or dots could lead them outside the clusters' own.
func checkName(name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("cluster name %q: want 1 to 40 lowercase letters, digits and dashes, starting with a letter or digit", name)
	}
	return nil
}

// stateRoot holds the clusters' default state directories.
const stateRoot = "/var/tmp/kmaint-realcluster"

// network is the cluster's address plan. It is private to the cluster's
// network namespace, so every cluster can use the same one.
type network struct {
	bridge    string
	gateway   string // the control plane's address on the bridge
	prefix    int
	serviceIP string // the kubernetes Service's cluster IP
	services  string // the Service range
}

func clusterNetwork() network {
	return network{
		bridge:    "kbr0",
		gateway:   "10.77.0.1",
		prefix:    24,
		serviceIP: "10.96.0.1",
		services:  "10.96.0.0/16",
	}
}

// nodeIP is node i's address on the bridge (i from 1).
func nodeIP(i int) string { return fmt.Sprintf("10.77.0.%d", 10+i) }

// podCIDR is node i's pod network.
func podCIDR(i int) string { return fmt.Sprintf("10.244.%d.0/24", i) }

func (c *Config) setDefaults() error {
	if c.Name == "" {
		c.Name = "kmaint"
	}
	if c.Nodes == 0 {
		c.Nodes = 3
	}
	if err := checkName(c.Name); err != nil {
		return err
	}
	if c.Nodes < 1 || c.Nodes > 200 {
		return fmt.Errorf("nodes %d: want 1 to 200", c.Nodes)
	}
	if c.StateDir == "" {
		c.StateDir = filepath.Join(stateRoot, c.Name)
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = 5 * time.Minute
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	var err error
	if c.KubeAssets, err = assetDir(c.KubeAssets, "KUBEBUILDER_ASSETS", "k8s", "kube-apiserver",
		"hack/envtest-assets.sh bin"); err != nil {
		return err
	}
	if c.ClusterAssets, err = assetDir(c.ClusterAssets, "REALCLUSTER_ASSETS", "cluster", "kubelet",
		"hack/cluster-assets.sh bin"); err != nil {
		return err
	}
	if c.NodeRootfs, err = assetDir(c.NodeRootfs, "REALCLUSTER_ROOTFS", "node-rootfs", ".complete",
		"hack/node-rootfs.sh bin"); err != nil {
		return err
	}
	return nil
}

// assetDir returns dir when set, else the environment variable env, else
// the newest bin/SUB/* that holds file (hack/*.sh link the cached builds
// there).
func assetDir(dir, env, sub, file, builder string) (string, error) {
	if dir == "" {
		dir = os.Getenv(env)
	}
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
			return "", fmt.Errorf("%s: %w", dir, err)
		}
		return dir, nil
	}
	matches, _ := filepath.Glob(filepath.Join(RepoRoot(), "bin", sub, "*", file))
	if len(matches) == 0 {
		return "", fmt.Errorf("no bin/%s/*/%s: run %s (make test does), or set %s", sub, file, builder, env)
	}
	sort.Slice(matches, func(i, j int) bool { return modTime(matches[i]).After(modTime(matches[j])) })
	// bin/SUB/* links into the machine's build cache (hack/cache.sh); the
	// nodes' mounts and a person reading the logs get the real place.
	return filepath.EvalSymlinks(filepath.Dir(matches[0]))
}

// modTime is when p was written: the file a build writes last tells which
// build is the newest.
func modTime(p string) time.Time {
	st, err := os.Stat(p)
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}

// RepoRoot is the repository's root (repo.Root).
func RepoRoot() string { return repo.Root() }

// errMissing marks a missing prerequisite (not root, no systemd-nspawn):
// tests may skip on it outside CI.
var errMissing = errors.New("missing prerequisite")

// IsMissingPrerequisite tells whether Start failed for want of something
// the machine lacks rather than for a fault of the cluster.
func IsMissingPrerequisite(err error) bool { return errors.Is(err, errMissing) }

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
