package realkmaint

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/realcluster"
	"github.com/kmaint/kmaint/test/testbed"
)

const (
	// upgradePool is the pool of every node the upgrade's rollouts roll.
	upgradePool = "upgrade"
	// upgradeTag and upgradeVersion name the image built from the same
	// tree with another version stamp, as a new release is.
	upgradeTag     = "upgrade"
	upgradeVersion = "v0.1.1-upgrade-test"
)

// kmaintUpgradedMidRollout upgrades kmaint while a config rollout over
// every node is under way, then downgrades it back with another rollout
// under way, as the chart's README says a release is installed: the CRDs
// applied first (kubectl apply --server-side --force-conflicts; on the way
// up with the CRDs changed, as a release changes them), with objects of
// every kind present (the rollout's open NodeMaintenances among them), then
// `helm upgrade --reuse-values` with the other image's tag. Each time both
// operator replicas and every daemon are replaced by pods of the other
// image, which say its version as they start; the rollout completes with
// every node rebooted exactly once; a watcher of the pool fails the test
// the moment two nodes are unavailable at once; and every object is there
// after, the same object with the same spec.
func kmaintUpgradedMidRollout(t *testing.T, c *realcluster.Cluster, kc client.Client) {
	g := NewWithT(t)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.RestConfig())
	g.Expect(err).NotTo(HaveOccurred())

	// The other release: the same tree, another name and version stamp,
	// linked under a bin directory of its own (bin/image stays the
	// tests' image).
	began := time.Now()
	tarball, err := buildImage(ctx, filepath.Join(realcluster.RepoRoot(), "bin", "upgrade"),
		[]string{"IMAGE_NAME=localhost/kmaint:" + upgradeTag, "VERSION=" + upgradeVersion})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(importEverywhere(ctx, c, tarball)).To(Succeed())
	t.Logf("the image stamped %s built and imported into every node in %s", upgradeVersion, time.Since(began).Round(time.Second))
	installed := runningVersion(g, cs)
	g.Expect(installed).NotTo(Equal(upgradeVersion))

	idle := idleObjects(t, kc)
	poolOfEveryNode(t, c, kc, upgradePool)
	bed := &testbed.Bed{Config: c.RestConfig(), Client: kc, Scheme: kc.Scheme()}
	watcher := harness.WatchBudget(t, bed, upgradePool).FailAbove(1).ByAdmissions()

	installedCRDStamp := crdStamp(g, kc)
	steps := []struct{ tag, version, crdStamp string }{
		{upgradeTag, upgradeVersion, upgradeVersion},
		{"local", installed, ""},
	}
	for i, to := range steps {
		config := fmt.Sprintf("upgrade-%d", i)
		boots := bootCounts(c)
		g.Expect(cmd.Rollout(ctx, kc, &bytes.Buffer{}, cmd.RolloutOptions{Pool: upgradePool, Config: config})).To(Succeed())
		// Under way: a node admitted, the others still to come.
		g.Eventually(func(g Gomega) {
			g.Expect(admittedNodes(g, kc)).NotTo(BeEmpty())
		}, timeout, 200*time.Millisecond).Should(Succeed(), "the rollout to %s under way", config)

		start := time.Now()
		objects := idle.withRecords(g, kc)
		if to.crdStamp != "" {
			// Why the README says --force-conflicts: helm's install owns
			// every field of the CRDs.
			g.Expect(applyCRDs(ctx, c, to.crdStamp, false)).To(MatchError(ContainSubstring("conflict")))
		}
		g.Expect(applyCRDs(ctx, c, to.crdStamp, true)).To(Succeed())
		expectCRDsStamped(g, kc, cmp.Or(to.crdStamp, installedCRDStamp))
		g.Expect(helmUpgrade(ctx, c, "image.tag="+to.tag)).To(Succeed())
		g.Eventually(func(g Gomega) {
			expectKmaintRuns(g, cs, "localhost/kmaint:"+to.tag, to.version, len(c.Nodes()))
		}, 2*timeout, time.Second).Should(Succeed())
		t.Logf("kmaint %s replaced by %s (%s) mid-rollout in %s", installed, to.version, to.tag, time.Since(start).Round(time.Second))

		for _, n := range c.Nodes() {
			g.Eventually(func(g Gomega) {
				node := settledNode(g, kc, n.Name())
				g.Expect(node.Annotations).To(HaveKeyWithValue(protocol.CurrentConfig, config), n.Name())
			}, 2*timeout, time.Second).Should(Succeed())
		}
		expectRebootedOnce(g, c, boots, c.Nodes()...)
		objects.expectUnchanged(g, kc)
		installed = to.version
	}
	most, moments := watcher.MostUnavailable()
	g.Expect(most).To(Equal(1), "the watcher saw one node at a time unavailable (over %d changes)", moments)
}

// crdStamp is the controller-gen version annotation of the installed
// NodeMaintenance CRD.
func crdStamp(g Gomega, kc client.Client) string {
	var crd apiextensionsv1.CustomResourceDefinition
	g.Expect(kc.Get(context.Background(), client.ObjectKey{Name: "nodemaintenances.kmaint.io"}, &crd)).To(Succeed())
	stamp := crd.Annotations["controller-gen.kubebuilder.io/version"]
	g.Expect(stamp).NotTo(BeEmpty())
	return stamp
}

// admittedNodes names the nodes the gate admitted.
func admittedNodes(g Gomega, kc client.Client) []string {
	var nodes corev1.NodeList
	g.Expect(kc.List(context.Background(), &nodes)).To(Succeed())
	var out []string
	for _, n := range nodes.Items {
		if _, ok := n.Annotations[protocol.Admitted]; ok {
			out = append(out, n.Name)
		}
	}
	return out
}

// applyCRDs applies the chart's CRDs as its README tells a user to before
// helm upgrade, which never touches them. stamp, when set, stands for a
// release whose CRDs differ from those installed: it replaces their
// controller-gen version annotation, which every release of controller-gen
// changes, and which helm's install owns, as it owns every field it set.
// force adds --force-conflicts, which the README's command has.
func applyCRDs(ctx context.Context, c *realcluster.Cluster, stamp string, force bool) error {
	crds := filepath.Join(realcluster.RepoRoot(), "config", "helm", "kmaint", "crds")
	if stamp != "" {
		dir, err := os.MkdirTemp("", "kmaint-crds-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		files, err := filepath.Glob(filepath.Join(crds, "*.yaml"))
		if err != nil {
			return err
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			changed := crdVersionAnnotation.ReplaceAll(b, []byte("${1}"+stamp))
			if bytes.Equal(changed, b) {
				return fmt.Errorf("%s has no controller-gen version annotation to change", f)
			}
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), changed, 0o644); err != nil {
				return err
			}
		}
		crds = dir
	}
	args := []string{"--kubeconfig", c.Kubeconfig(), "apply", "--server-side", "-f", crds}
	if force {
		args = append(args, "--force-conflicts")
	}
	out, err := exec.CommandContext(ctx, c.Kubectl(), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl %s: %w: %s", strings.Join(args[2:], " "), err, out)
	}
	return nil
}

var crdVersionAnnotation = regexp.MustCompile(`(?m)^(    controller-gen\.kubebuilder\.io/version: ).*$`)

// expectCRDsStamped: every kmaint CRD carries the stamp's annotation, and
// stores v1alpha1 only.
func expectCRDsStamped(g Gomega, kc client.Client, stamp string) {
	var crds apiextensionsv1.CustomResourceDefinitionList
	g.Expect(kc.List(context.Background(), &crds)).To(Succeed())
	n := 0
	for _, crd := range crds.Items {
		if crd.Spec.Group != v1alpha1.GroupVersion.Group {
			continue
		}
		n++
		g.Expect(crd.Annotations).To(HaveKeyWithValue("controller-gen.kubebuilder.io/version", stamp), crd.Name)
		g.Expect(crd.Status.StoredVersions).To(Equal([]string{v1alpha1.GroupVersion.Version}), crd.Name)
	}
	g.Expect(n).To(Equal(4), "kmaint's CRDs")
}

// helmUpgrade upgrades the release with its values kept and set changed,
// waiting until every pod is Ready.
func helmUpgrade(ctx context.Context, c *realcluster.Cluster, set ...string) error {
	helm, err := helmBinary()
	if err != nil {
		return err
	}
	args := []string{"upgrade", "kmaint", filepath.Join(realcluster.RepoRoot(), "config", "helm", "kmaint"),
		"--kubeconfig", c.Kubeconfig(), "--namespace", Namespace, "--reuse-values",
		"--wait", "--timeout", (2 * timeout).String()}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	if out, err := exec.CommandContext(ctx, helm, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("helm upgrade: %w: %s", err, out)
	}
	return nil
}

// expectKmaintRuns: kmaint's pods are the operator's two replicas and a
// daemon per node, each Ready, of image, and each said it started as
// version; no pod of another image is left.
func expectKmaintRuns(g Gomega, cs kubernetes.Interface, image, version string, nodes int) {
	ctx := context.Background()
	pods, err := cs.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	operators, daemons := 0, 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		main := p.Spec.Containers[0]
		g.Expect(main.Image).To(Equal(image), "pod %s", p.Name)
		g.Expect(podReady(&p)).To(BeTrue(), "pod %s Ready", p.Name)
		log, err := cs.CoreV1().Pods(Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: main.Name}).DoRaw(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(startedAs(string(log))).To(Equal(version), "the version pod %s started as", p.Name)
		switch {
		case strings.HasPrefix(p.Name, "kmaint-operator-"):
			operators++
		case strings.HasPrefix(p.Name, "kmaint-daemon-"):
			daemons++
		}
	}
	g.Expect(operators).To(Equal(2), "operator replicas")
	g.Expect(daemons).To(Equal(nodes), "daemons")
}

// runningVersion is the version the leading operator started as.
func runningVersion(g Gomega, cs kubernetes.Interface) string {
	p := leaderPod(g, cs)
	log, err := cs.CoreV1().Pods(Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: p.Spec.Containers[0].Name}).DoRaw(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	v := startedAs(string(log))
	g.Expect(v).NotTo(BeEmpty(), "the operator's log says its version")
	return v
}

// startedAs reads the version from a kmaint binary's first log line, a
// JSON object ("Starting kmaint-operator" or "Starting kmaint-daemon").
func startedAs(log string) string {
	for line := range strings.Lines(log) {
		var entry struct {
			Msg     string `json:"msg"`
			Version string `json:"version"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && strings.HasPrefix(entry.Msg, "Starting kmaint-") {
			return entry.Version
		}
	}
	return ""
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// everyKind is an object of each of kmaint's kinds, as they were before an
// upgrade.
type everyKind []client.Object

// idleObjects creates an object of each kind that the rollouts do not make
// (a pool that selects no node, a suspended schedule policy, the cluster's
// gate, open), deleted when t ends.
func idleObjects(t *testing.T, kc client.Client) everyKind {
	g := NewWithT(t)
	ctx := context.Background()
	pool := gen.Pool("upgrade-idle", intstr.FromInt32(1))
	createPool(t, kc, pool)
	policy := &v1alpha1.RebootPolicy{ObjectMeta: metav1.ObjectMeta{Name: "upgrade-idle"},
		Spec: v1alpha1.RebootPolicySpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "upgrade-idle"}},
			Schedule:     &v1alpha1.ScheduleTrigger{Cron: "0 3 1 1 *"},
			Suspend:      true,
		}}
	createPolicy(t, kc, policy)
	gate := &v1alpha1.MaintenanceGate{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClusterGateName},
		Spec: v1alpha1.MaintenanceGateSpec{Reason: "open: the upgrade test checks the gate outlives a CRD upgrade"}}
	switch err := kc.Create(ctx, gate); {
	case apierrors.IsAlreadyExists(err):
		g.Expect(kc.Get(ctx, client.ObjectKeyFromObject(gate), gate)).To(Succeed())
		g.Expect(gate.Spec.Paused).To(BeFalse(), "an earlier test left the cluster's gate paused")
	default:
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { deleteObject(t, kc, gate) })
	}
	return everyKind{pool, policy, gate}
}

// withRecords adds the newest NodeMaintenance of each node as they are now:
// those of a rollout under way are open. Retention keeps ten a node, and
// never the newest, so those added are there after the upgrade.
func (objs everyKind) withRecords(g Gomega, kc client.Client) everyKind {
	var records v1alpha1.NodeMaintenanceList
	g.Expect(kc.List(context.Background(), &records)).To(Succeed())
	newest := map[string]*v1alpha1.NodeMaintenance{}
	for i := range records.Items {
		r := &records.Items[i]
		if n := newest[r.Spec.NodeName]; n == nil || n.CreationTimestamp.Before(&r.CreationTimestamp) {
			newest[r.Spec.NodeName] = r
		}
	}
	g.Expect(newest).NotTo(BeEmpty(), "NodeMaintenances")
	out := slices.Clone(objs)
	for _, r := range newest {
		out = append(out, r)
	}
	return out
}

// expectUnchanged: each object is still there, the same object (UID) with
// the same spec (generation), read through the upgraded CRDs.
func (objs everyKind) expectUnchanged(g Gomega, kc client.Client) {
	for _, o := range objs {
		now := o.DeepCopyObject().(client.Object)
		g.Expect(kc.Get(context.Background(), client.ObjectKeyFromObject(o), now)).To(Succeed(), "%T %s", o, o.GetName())
		g.Expect(now.GetUID()).To(Equal(o.GetUID()), "%T %s", o, o.GetName())
		g.Expect(now.GetGeneration()).To(Equal(o.GetGeneration()), "%T %s: its spec changed", o, o.GetName())
	}
}
