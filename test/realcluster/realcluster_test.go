package realcluster_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kmaint/kmaint/test/realcluster"
)

// busybox is the image hack/cluster-assets.sh builds and every node
// imports at boot.
const busybox = "docker.io/library/busybox:kmaint"

// start starts a cluster for t (see realcluster.Require).
func start(t *testing.T, ctx context.Context, cfg realcluster.Config) *realcluster.Cluster {
	t.Helper()
	realcluster.Require(t, cfg)
	began := time.Now()
	c, err := realcluster.Start(ctx, cfg)
	if err != nil {
		if c != nil {
			t.Logf("state kept in %s", c.StateDir())
		}
		t.Fatalf("start the cluster: %v", err)
	}
	t.Logf("cluster of %d nodes Ready in %s, using %d MiB", len(c.Nodes()), time.Since(began).Round(time.Millisecond), c.MemoryBytes()>>20)
	return c
}

// hostSysctls are the kernel settings kubelet wants, which each node shows
// it by bind mounts; the host's must stay as they were.
var hostSysctls = map[string]string{"vm/overcommit_memory": "1", "kernel/panic": "10", "kernel/panic_on_oops": "1"}

func readSysctls(t *testing.T) map[string]string {
	t.Helper()
	got := map[string]string{}
	for k := range hostSysctls {
		b, err := os.ReadFile("/proc/sys/" + k)
		if err != nil {
			t.Fatal(err)
		}
		got[k] = strings.TrimSpace(string(b))
	}
	return got
}

func TestRealCluster(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	hostBefore := readSysctls(t)
	// Two checkouts on one machine can run this at once under two names, as
	// they run test/realkmaint (with a suffix: the name tells clusters apart).
	name := "realcluster-test"
	if own := os.Getenv("KMAINT_REALCLUSTER_NAME"); own != "" {
		name = own + "-" + name
	}
	c := start(t, ctx, realcluster.Config{Name: name, Nodes: 3, Log: realcluster.TestLog(t)})
	stopped := false
	t.Cleanup(func() {
		if stopped {
			return
		}
		if t.Failed() {
			c.KeepState()
			t.Logf("state kept in %s (logs, each node's journal in nodes/*/upper/var/log/journal)", c.StateDir())
		}
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	cs, err := kubernetes.NewForConfig(c.RestConfig())
	g.Expect(err).NotTo(HaveOccurred())

	t.Run("every kubelet registers its node's boot ID", func(t *testing.T) {
		g := NewWithT(t)
		host, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		g.Expect(err).NotTo(HaveOccurred())
		boots := map[string]bool{strings.TrimSpace(string(host)): true}
		for _, n := range c.Nodes() {
			node, err := cs.CoreV1().Nodes().Get(ctx, n.Name(), metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(realcluster.NodeReady(node)).To(BeTrue(), "node %s Ready", n.Name())
			g.Expect(node.Status.NodeInfo.KubeletVersion).To(Equal("v1.37.2"))
			boot, err := n.BootID(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(node.Status.NodeInfo.BootID).To(Equal(boot), "node %s's boot ID as its kubelet registered it", n.Name())
			g.Expect(boots).NotTo(HaveKey(boot), "node %s's boot ID is its own, not the host's or another node's", n.Name())
			boots[boot] = true
		}
	})

	t.Run("a node is a machine of its own, the host is untouched", func(t *testing.T) {
		g := NewWithT(t)
		n := c.Nodes()[0]
		for k, want := range hostSysctls {
			out, err := n.Exec(ctx, "cat", "/proc/sys/"+k)
			g.Expect(err).NotTo(HaveOccurred(), "%s", out)
			g.Expect(strings.TrimSpace(string(out))).To(Equal(want), "%s inside node %s", k, n.Name())
		}
		g.Expect(readSysctls(t)).To(Equal(hostBefore), "the host's kernel settings")
		out, err := n.Exec(ctx, "systemctl", "is-active", "systemd-journald", "systemd-logind", "dbus", "containerd", "kubelet")
		g.Expect(err).NotTo(HaveOccurred(), "%s", out)
		out, err = n.Exec(ctx, "hostname")
		g.Expect(err).NotTo(HaveOccurred(), "%s", out)
		g.Expect(strings.TrimSpace(string(out))).To(Equal(n.Name()))
		out, err = n.ExecWith(ctx, realcluster.ExecOptions{User: "kmaint-user"}, "id", "-u")
		g.Expect(err).NotTo(HaveOccurred(), "%s", out)
		g.Expect(strings.TrimSpace(string(out))).To(Equal("1000"))
		// What a person types on a node to run something as a unit of its
		// systemd, in the node's own cgroups.
		out, err = n.Exec(ctx, "systemd-run", "--wait", "--pipe", "--quiet", "--uid=kmaint-user", "id", "-un")
		g.Expect(err).NotTo(HaveOccurred(), "%s", out)
		g.Expect(strings.TrimSpace(string(out))).To(Equal("kmaint-user"))
		out, err = n.ExecWith(ctx, realcluster.ExecOptions{User: "kmaint-user"}, "busctl", "call", "org.freedesktop.login1",
			"/org/freedesktop/login1", "org.freedesktop.login1.Manager", "Reboot", "b", "false")
		// Without polkit, logind lets only root reboot.
		g.Expect(err).To(HaveOccurred(), "an ordinary user's Reboot: %s", out)
		g.Expect(string(out)).To(Or(ContainSubstring("Access denied"), ContainSubstring("Interactive authentication required")))
		t.Logf("an ordinary user's Reboot: %s", strings.TrimSpace(string(out)))
		tarball, err := os.Open(filepath.Join(c.Images(), "busybox.tar"))
		g.Expect(err).NotTo(HaveOccurred())
		defer tarball.Close()
		g.Expect(n.ImportImage(ctx, tarball)).To(Succeed())
		out, err = n.Exec(ctx, "ctr", "--namespace", "k8s.io", "images", "ls", "--quiet")
		g.Expect(err).NotTo(HaveOccurred(), "%s", out)
		g.Expect(strings.Fields(string(out))).To(ContainElement(busybox))
	})

	ns := "work"
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	createWorkloads(t, ctx, cs, ns)

	t.Run("a Deployment and a DaemonSet run on the nodes", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			ds, err := cs.AppsV1().DaemonSets(ns).Get(ctx, "everywhere", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ds.Status.NumberReady).To(BeEquivalentTo(len(c.Nodes())))
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, "guarded", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(2))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	t.Run("pods reach the API server's Service and pods on other nodes; kubectl exec reaches kubelets", func(t *testing.T) {
		g := NewWithT(t)
		from := listPods(t, ctx, cs, ns, "app=guarded")[0]
		var to *corev1.Pod
		for _, p := range listPods(t, ctx, cs, ns, "app=everywhere") {
			if p.Spec.NodeName != from.Spec.NodeName {
				to = &p
				break
			}
		}
		g.Expect(to).NotTo(BeNil(), "a DaemonSet pod on another node than %s", from.Spec.NodeName)
		out, err := kubectl(ctx, c, "exec", "-n", ns, from.Name, "--", "nc", "-w", "10", to.Status.PodIP, "8080")
		g.Expect(err).NotTo(HaveOccurred(), "%s", out)
		g.Expect(strings.TrimSpace(string(out))).To(Equal("hello from "+to.Spec.NodeName), "pod %s on %s to pod %s on %s",
			from.Name, from.Spec.NodeName, to.Name, to.Spec.NodeName)
		// In-cluster clients dial the kubernetes Service's cluster IP; no
		// kube-proxy runs, the API server answers there itself.
		svc, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		// busybox has no TLS the API server speaks; a Go TLS server answers
		// plain HTTP with a message of its own.
		out, err = kubectl(ctx, c, "exec", "-n", ns, from.Name, "--", "sh", "-c",
			`printf 'GET /healthz HTTP/1.0\r\n\r\n' | nc -w 10 "$0" 443`, svc.Spec.ClusterIP)
		g.Expect(err).NotTo(HaveOccurred(), "%s", out)
		g.Expect(string(out)).To(ContainSubstring("Client sent an HTTP request to an HTTPS server"))
	})

	t.Run("a pod reaches an address of the host that the cluster exposes", func(t *testing.T) {
		g := NewWithT(t)
		// What a test's Prometheus or webhook on the host's loopback is.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		g.Expect(err).NotTo(HaveOccurred())
		defer ln.Close()
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				_, _ = fmt.Fprintf(conn, "hello from the host's %s\n", ln.Addr())
				_ = conn.Close()
			}
		}()
		inside, err := c.Expose(ln.Addr().String())
		g.Expect(err).NotTo(HaveOccurred())
		host, port, err := net.SplitHostPort(inside)
		g.Expect(err).NotTo(HaveOccurred())
		from := listPods(t, ctx, cs, ns, "app=guarded")[0]
		// nc has nothing to send and half-closes at once: each time, the
		// whole answer must still come back.
		for range 5 {
			out, err := kubectl(ctx, c, "exec", "-n", ns, from.Name, "--", "nc", "-w", "10", host, port)
			g.Expect(err).NotTo(HaveOccurred(), "%s", out)
			g.Expect(strings.TrimSpace(string(out))).To(Equal("hello from the host's "+ln.Addr().String()), "pod %s on %s to %s", from.Name, from.Spec.NodeName, inside)
		}
		_, err = c.Expose("no port")
		g.Expect(err).To(HaveOccurred(), "an address without a port")
	})

	t.Run("kubectl drain evicts the PDB-guarded pod", func(t *testing.T) {
		g := NewWithT(t)
		victim := listPods(t, ctx, cs, ns, "app=guarded")[0]
		began := time.Now()
		out, err := kubectl(ctx, c, "drain", victim.Spec.NodeName, "--ignore-daemonsets", "--timeout=3m")
		g.Expect(err).NotTo(HaveOccurred(), "%s", out)
		t.Logf("drain of %s in %s:\n%s", victim.Spec.NodeName, time.Since(began).Round(time.Millisecond), out)
		g.Expect(string(out)).To(ContainSubstring("evicting pod " + ns + "/" + victim.Name))
		g.Eventually(func(g Gomega) {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, "guarded", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(2))
			pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=guarded"})
			g.Expect(err).NotTo(HaveOccurred())
			for _, p := range pods.Items {
				g.Expect(p.Spec.NodeName).NotTo(Equal(victim.Spec.NodeName))
			}
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		out, err = kubectl(ctx, c, "uncordon", victim.Spec.NodeName)
		g.Expect(err).NotTo(HaveOccurred(), "%s", out)
	})

	t.Run("a reboot through logind boots the node again with a new boot ID", func(t *testing.T) {
		g := NewWithT(t)
		n := c.Nodes()[1]
		before, err := cs.CoreV1().Nodes().Get(ctx, n.Name(), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		oldBoot := before.Status.NodeInfo.BootID
		began := time.Now()
		out, err := n.Exec(ctx, "busctl", "call", "org.freedesktop.login1", "/org/freedesktop/login1",
			"org.freedesktop.login1.Manager", "Reboot", "b", "false")
		g.Expect(err).NotTo(HaveOccurred(), "%s", out)
		var newBoot string
		g.Eventually(func(g Gomega) {
			node, err := cs.CoreV1().Nodes().Get(ctx, n.Name(), metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			newBoot = node.Status.NodeInfo.BootID
			g.Expect(newBoot).NotTo(Equal(oldBoot))
			g.Expect(realcluster.NodeReady(node)).To(BeTrue())
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		t.Logf("node %s rebooted and Ready again in %s: boot %s -> %s", n.Name(), time.Since(began).Round(time.Millisecond), oldBoot, newBoot)
		g.Expect(n.Boots()).To(Equal(2))
		inside, err := n.BootID(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(newBoot).To(Equal(inside), "the boot ID the kubelet registered is the node's")

		out, err = n.Exec(ctx, "journalctl", "--list-boots", "--no-pager")
		g.Expect(err).NotTo(HaveOccurred(), "%s", out)
		t.Logf("journalctl --list-boots on %s:\n%s", n.Name(), out)
		g.Expect(string(out)).To(ContainSubstring(strings.ReplaceAll(oldBoot, "-", "")))
		g.Expect(string(out)).To(ContainSubstring(strings.ReplaceAll(newBoot, "-", "")))

		g.Eventually(func(g Gomega) {
			ds, err := cs.AppsV1().DaemonSets(ns).Get(ctx, "everywhere", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ds.Status.NumberReady).To(BeEquivalentTo(len(c.Nodes())))
		}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Succeed(), "the DaemonSet's pod runs again on the rebooted node")
		t.Logf("cluster memory after the reboot: %d MiB, peak %d MiB", c.MemoryBytes()>>20, c.PeakMemoryBytes()>>20)
	})

	t.Run("a node held after its reboot stays down until released", func(t *testing.T) {
		g := NewWithT(t)
		n := c.Nodes()[2]
		before, err := n.BootID(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		boots := n.Boots()
		hold := n.HoldNextBoot()
		out, err := n.Exec(ctx, "busctl", "call", "org.freedesktop.login1", "/org/freedesktop/login1",
			"org.freedesktop.login1.Manager", "Reboot", "b", "false")
		g.Expect(err).NotTo(HaveOccurred(), "%s", out)
		g.Eventually(hold.Down()).WithTimeout(3*time.Minute).Should(BeClosed(), "the node went down for its reboot")
		_, err = n.Exec(ctx, "true")
		g.Expect(err).To(HaveOccurred(), "nothing runs on a node held down")
		g.Expect(n.Boots()).To(Equal(boots), "not booted again while held")

		hold.Release()
		g.Eventually(func(g Gomega) {
			node, err := cs.CoreV1().Nodes().Get(ctx, n.Name(), metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(node.Status.NodeInfo.BootID).NotTo(Equal(before))
			g.Expect(realcluster.NodeReady(node)).To(BeTrue())
		}).WithContext(ctx).WithTimeout(4*time.Minute).WithPolling(time.Second).Should(Succeed(), "back once released")
		g.Expect(n.Boots()).To(Equal(boots + 1))

		// Held down again, and left so: Stop must clean up a held node too.
		hold = n.HoldNextBoot()
		out, err = n.Exec(ctx, "busctl", "call", "org.freedesktop.login1", "/org/freedesktop/login1",
			"org.freedesktop.login1.Manager", "Reboot", "b", "false")
		g.Expect(err).NotTo(HaveOccurred(), "%s", out)
		g.Eventually(hold.Down()).WithTimeout(3 * time.Minute).Should(BeClosed())
	})

	t.Run("nothing is left after Stop", func(t *testing.T) {
		g := NewWithT(t)
		stopped = true
		began := time.Now()
		g.Expect(c.Stop(ctx)).To(Succeed())
		t.Logf("stopped in %s", time.Since(began).Round(time.Millisecond))
		g.Expect(c.Leftovers()).To(BeEmpty())
		_, err := os.Stat(c.StateDir())
		g.Expect(os.IsNotExist(err)).To(BeTrue(), "state directory removed")
	})
}

// kubectl runs the cluster's kubectl on the host with the admin kubeconfig.
func kubectl(ctx context.Context, c *realcluster.Cluster, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.Kubectl(), append([]string{"--kubeconfig", c.Kubeconfig()}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

// listPods lists the Running pods that match selector, at least one.
func listPods(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, selector string) []corev1.Pod {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector, FieldSelector: "status.phase=Running"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		t.Fatalf("no Running pod matches %s", selector)
	}
	return pods.Items
}

// createWorkloads creates a Deployment of two busybox pods guarded by a
// PodDisruptionBudget that lets one go at a time, and a DaemonSet whose
// pods answer on port 8080 with their node's name.
func createWorkloads(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string) {
	t.Helper()
	g := NewWithT(t)
	pod := func(app string, command ...string) corev1.PodTemplateSpec {
		grace := int64(1)
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: &grace,
				Containers: []corev1.Container{{
					Name: "main", Image: busybox, ImagePullPolicy: corev1.PullNever,
					Command: command,
					Env: []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{
						FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
				}},
			},
		}
	}
	sel := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	replicas := int32(2)
	_, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "guarded"},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas, Selector: sel("guarded"), Template: pod("guarded", "sleep", "3600")},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	minAvailable := intstr.FromInt32(1)
	_, err = cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guarded"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: sel("guarded")},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cs.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "everywhere"},
		Spec: appsv1.DaemonSetSpec{Selector: sel("everywhere"), Template: pod("everywhere",
			"sh", "-c", `echo "hello from $NODE" >/tmp/hello; exec nc -ll -p 8080 -e cat /tmp/hello`)},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
}
