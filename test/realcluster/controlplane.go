package realcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// apiserverPort is the API server's port. 443 is what the kubernetes
// Service says, so that in-cluster clients that dial the Service's cluster
// IP (an address of the namespace, see holderScript) reach the API server
// without kube-proxy.
const apiserverPort = "443"

// process is one control plane program.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// startProcess runs argv in the cluster's namespaces and control plane
// cgroups, its output in StateDir/logs/NAME.log.
func (c *Cluster) startProcess(name string, argv ...string) (*process, error) {
	logFile, err := os.Create(filepath.Join(c.cfg.StateDir, "logs", name+".log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	full := c.control.wrap(c.ns.enter(argv...)...)
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group: a ^C at the terminal reaches the test, whose
	// Stop ends the cluster in order, not every process at once.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	c.processes = append(c.processes, p)
	return p, nil
}

// stop asks the process to end and waits a while for it.
func (p *process) stop(timeout time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
	}
}

// startControlPlane starts etcd, kube-apiserver, kube-controller-manager
// and kube-scheduler, and waits for the API server to be ready.
func (c *Cluster) startControlPlane(ctx context.Context) error {
	k8s, pki, net := c.cfg.KubeAssets, c.pki, c.net
	if _, err := c.startProcess("etcd", filepath.Join(k8s, "etcd"),
		"--data-dir", filepath.Join(c.cfg.StateDir, "etcd"),
		"--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
		"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"--initial-cluster", "default=http://127.0.0.1:2380",
		// Fewer fsyncs: the data lives as long as the test.
		"--unsafe-no-fsync", "--quota-backend-bytes=2147483648"); err != nil {
		return err
	}
	if _, err := c.startProcess("kube-apiserver", filepath.Join(k8s, "kube-apiserver"),
		"--etcd-servers=http://127.0.0.1:2379",
		"--bind-address=0.0.0.0", "--secure-port="+apiserverPort, "--advertise-address="+net.gateway,
		"--tls-cert-file="+pki.path("apiserver.crt"), "--tls-private-key-file="+pki.path("apiserver.key"),
		"--client-ca-file="+pki.path("ca.crt"),
		"--kubelet-client-certificate="+pki.path("apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+pki.path("apiserver-kubelet-client.key"),
		// The nodes' names resolve nowhere: reach kubelets (logs, exec) by
		// address.
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--service-cluster-ip-range="+net.services,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+pki.path("sa.pub"), "--service-account-signing-key-file="+pki.path("sa.key"),
		"--allow-privileged=true",
		// Without kube-proxy no cluster IP but the API server's answers:
		// webhooks and aggregated APIs are reached at their endpoints.
		"--enable-aggregator-routing=true",
		"--profiling=false"); err != nil {
		return err
	}
	if err := c.waitAPIServer(ctx); err != nil {
		return err
	}
	cm := pki.path("controller-manager.kubeconfig")
	if _, err := c.startProcess("kube-controller-manager", filepath.Join(c.cfg.ClusterAssets, "kube-controller-manager"),
		"--kubeconfig="+cm, "--authentication-kubeconfig="+cm, "--authorization-kubeconfig="+cm,
		"--service-account-private-key-file="+pki.path("sa.key"), "--root-ca-file="+pki.path("ca.crt"),
		"--use-service-account-credentials=true", "--leader-elect=false", "--bind-address=127.0.0.1",
		"--service-cluster-ip-range="+net.services, "--allocate-node-cidrs=false",
		"--profiling=false"); err != nil {
		return err
	}
	sched := pki.path("scheduler.kubeconfig")
	if _, err := c.startProcess("kube-scheduler", filepath.Join(c.cfg.ClusterAssets, "kube-scheduler"),
		"--kubeconfig="+sched, "--authentication-kubeconfig="+sched, "--authorization-kubeconfig="+sched,
		"--leader-elect=false", "--bind-address=127.0.0.1", "--profiling=false"); err != nil {
		return err
	}
	return nil
}

// waitAPIServer waits until the API server answers /readyz.
func (c *Cluster) waitAPIServer(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, p := range c.processes {
			select {
			case <-p.done:
				return false, fmt.Errorf("%s exited: %s", p.name, c.logTail(p.name))
			default:
			}
		}
		body, err := c.clientset.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			last = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(body)))
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("wait for the API server: %w (last: %v)", err, last)
	}
	return nil
}

// logTail is the end of a control plane process's log.
func (c *Cluster) logTail(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.cfg.StateDir, "logs", name+".log"))
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// issueCertificates makes the control plane's certificates and
// kubeconfigs: every component has its own identity, so that RBAC and the
// Node authorizer apply to it as in a real cluster.
func (c *Cluster) issueCertificates() error {
	p, n := c.pki, c.net
	if _, _, err := p.issue("apiserver", identity{
		cn: "kube-apiserver", serving: true,
		ips: []net.IP{net.ParseIP(n.gateway), net.ParseIP(n.serviceIP), net.ParseIP("127.0.0.1")},
		dns: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"},
	}); err != nil {
		return err
	}
	if _, _, err := p.issue("apiserver-kubelet-client", identity{cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}}); err != nil {
		return err
	}
	inside := "https://" + net.JoinHostPort(n.gateway, apiserverPort)
	for name, id := range map[string]identity{
		"controller-manager": {cn: "system:kube-controller-manager"},
		"scheduler":          {cn: "system:kube-scheduler"},
		"admin-inside":       {cn: "kmaint-realcluster-admin", orgs: []string{"system:masters"}},
	} {
		crt, key, err := p.issue(name, id)
		if err != nil {
			return err
		}
		if err := os.WriteFile(p.path(name+".kubeconfig"), kubeconfig(inside, p.caPEM(), crt, key), 0o600); err != nil {
			return err
		}
	}
	return nil
}
