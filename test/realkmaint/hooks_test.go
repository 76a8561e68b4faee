package realkmaint

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/cmd/kubectl-kmaint/cmd"
	"github.com/kmaint/kmaint/operator/hooks"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/realcluster"
	"github.com/kmaint/kmaint/test/testbed"
)

// The hooked rollout's pool, the chart's hooks namespace, and where its
// Jobs keep their files on each host.
const (
	hookedPool     = "hooked"
	hooksNamespace = "kmaint-hooks"
	hookHostDir    = "/var/lib/kmaint-hooktest"
	// brokenConfig is a config whose "package" installs but does not take:
	// the stage Job writes the old config, and the check after the reboot
	// finds it.
	brokenConfig = "os-broken"
)

// hostJob is a Job hook of a busybox script with the host's hookHostDir
// at /host.
func hostJob(name, script string) v1alpha1.Hook {
	return v1alpha1.Hook{Name: name, Timeout: &metav1.Duration{Duration: 5 * time.Minute}, Job: &v1alpha1.HookJob{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "main", Image: busybox, ImagePullPolicy: corev1.PullNever,
				Command:      []string{"sh", "-ec", script},
				VolumeMounts: []corev1.VolumeMount{{Name: "host", MountPath: "/host"}},
			}},
			Volumes: []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: hookHostDir, Type: new(corev1.HostPathDirectoryOrCreate),
			}}}},
		},
	}}}
}

// The stage Job notes that it ran, takes a while (for the leader to be
// deleted meanwhile), and writes the config it was asked for on the host,
// but for brokenConfig; the check after the reboot reads it.
const (
	stageScript = `echo "$KMAINT_BOOT_ID" >> "/host/stage-runs-$KMAINT_DESIRED_CONFIG"
sleep 6
case "$KMAINT_DESIRED_CONFIG" in ` + brokenConfig + `) echo os-hooked ;; *) echo "$KMAINT_DESIRED_CONFIG" ;; esac > /host/config`
	checkScript = `test "$(cat /host/config)" = "$KMAINT_DESIRED_CONFIG"`
)

// hookedRollout rolls a config over every node of a pool whose
// beforeReboot Job writes it on the host and whose afterReboot Job checks
// it after the real reboot. The leading operator is deleted while a stage
// Job runs: each Job runs once all the same. Every node reboots once and
// reports the config its check found. Then a config whose stage does not
// take: the first node's check fails after its reboot, the pool halts with
// that node cordoned and admits no other; the config set back and the pool
// resumed, the node passes its check, reboots back through the same hooks,
// and the pool ends where it began.
func hookedRollout(t *testing.T, c *realcluster.Cluster, kc client.Client) {
	g := NewWithT(t)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.RestConfig())
	g.Expect(err).NotTo(HaveOccurred())
	for _, n := range c.Nodes() {
		_, err := n.Exec(ctx, "rm", "-rf", hookHostDir)
		g.Expect(err).NotTo(HaveOccurred())
	}
	bootsBefore := bootCounts(c)
	labelNodes(t, kc, hookedPool, nodeNames(c)...)
	pool := gen.Pool(hookedPool, intstr.FromInt32(1))
	pool.Spec.Hooks = &v1alpha1.Hooks{
		BeforeReboot: []v1alpha1.Hook{hostJob("stage", stageScript)},
		AfterReboot:  []v1alpha1.Hook{hostJob("check", checkScript)},
	}
	createPool(t, kc, pool)
	bed := &testbed.Bed{Config: c.RestConfig(), Client: kc, Scheme: kc.Scheme()}
	watcher := harness.WatchBudget(t, bed, hookedPool).FailAbove(1).ByAdmissions()

	began := time.Now()
	g.Expect(cmd.Rollout(ctx, kc, &bytes.Buffer{}, cmd.RolloutOptions{Pool: hookedPool, Config: "os-hooked"})).To(Succeed())
	// The leader deleted while a stage Job runs on a node it is not on.
	var deleted string
	g.Eventually(func(g Gomega) {
		leader := leaderPod(g, cs)
		for _, j := range poolJobs(g, kc, hookedPool) {
			if j.Status.Active > 0 && harness.JobEnv(&j, "KMAINT_HOOK") == "stage" && j.Annotations[hooks.NodeAnnotation] != leader.Spec.NodeName {
				g.Expect(cs.CoreV1().Pods(Namespace).Delete(ctx, leader.Name, metav1.DeleteOptions{})).To(Succeed())
				deleted = j.Name
				return
			}
		}
		g.Expect(deleted).NotTo(BeEmpty(), "a stage Job running on a node the leader is not on")
	}, 2*timeout, 500*time.Millisecond).Should(Succeed())
	t.Logf("the leading operator deleted while Job %s ran", deleted)

	for _, n := range c.Nodes() {
		g.Eventually(func(g Gomega) {
			node := settledNode(g, kc, n.Name())
			g.Expect(node.Annotations).To(HaveKeyWithValue(protocol.CurrentConfig, "os-hooked"), n.Name())
			g.Expect(node.Annotations).NotTo(HaveKey(protocol.Hook))
		}, 2*timeout, time.Second).Should(Succeed())
	}
	t.Logf("config os-hooked staged, rebooted into and checked on %d real nodes in %s", len(c.Nodes()), time.Since(began).Round(time.Second))
	expectRebootedOnce(g, c, bootsBefore, c.Nodes()...)
	for _, n := range c.Nodes() {
		g.Expect(hostFile(g, n, "config")).To(Equal("os-hooked"), n.Name())
		g.Expect(strings.Fields(hostFile(g, n, "stage-runs-os-hooked"))).To(HaveLen(1), "the stage Job ran once on %s", n.Name())
	}
	// One Job a hook and node, each succeeded.
	jobs := poolJobs(g, kc, hookedPool)
	g.Expect(jobs).To(HaveLen(2 * len(c.Nodes())))
	for _, j := range jobs {
		g.Expect(j.Status.Succeeded).To(BeEquivalentTo(1), "Job %s (%s on %s)", j.Name, harness.JobEnv(&j, "KMAINT_HOOK"), j.Annotations[hooks.NodeAnnotation])
	}
	expectHookTimes(g, kc, began, c.Nodes())
	expectOperatorAvailable(g, cs)

	// A config whose stage does not take: the first node's check fails
	// after its reboot, and the pool halts there.
	bootsBefore = bootCounts(c)
	g.Expect(cmd.Rollout(ctx, kc, &bytes.Buffer{}, cmd.RolloutOptions{Pool: hookedPool, Config: brokenConfig})).To(Succeed())
	var bad string
	g.Eventually(func(g Gomega) {
		var p v1alpha1.MaintenancePool
		g.Expect(kc.Get(ctx, client.ObjectKey{Name: hookedPool}, &p)).To(Succeed())
		cond := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.HaltedCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(cond.Reason).To(Equal(v1alpha1.HookFailedReason))
		g.Expect(p.Status.Halt).NotTo(BeNil())
		g.Expect(p.Status.Halt.Nodes).To(HaveLen(1))
		g.Expect(p.Status.Halt.Nodes[0].Check).To(Equal("check"))
		bad = p.Status.Halt.Nodes[0].Node
	}, 2*timeout, time.Second).Should(Succeed())
	t.Logf("%s came back from %s and failed its check; pool %s halted", bad, brokenConfig, hookedPool)
	// Room in the budget: only the halt holds the other nodes now.
	harness.PatchPool(g, bed, hookedPool, func(p *v1alpha1.MaintenancePool) { p.Spec.MaxUnavailable = new(intstr.FromInt32(2)) })
	g.Consistently(func(g Gomega) {
		for _, n := range c.Nodes() {
			st := readNode(g, kc, n.Name())
			if n.Name() == bad {
				g.Expect(st.Unschedulable).To(BeTrue(), "%s stays cordoned", bad)
				continue
			}
			g.Expect(st.Admission).To(BeNil(), "%s admitted while the pool is halted", n.Name())
		}
	}, 20*time.Second, time.Second).Should(Succeed())
	var rebooted []*realcluster.Node
	for _, n := range c.Nodes() {
		if n.Name() == bad {
			rebooted = append(rebooted, n)
		}
	}
	expectRebootedOnce(g, c, bootsBefore, rebooted...)

	// Rolled back, then resumed: the check runs again, passes, and the node
	// reboots back into the config through the same hooks. The others'
	// requests for the broken config are withdrawn, and they do not
	// reboot. The budget back at 1, the watcher's limit holds again.
	harness.PatchPool(g, bed, hookedPool, func(p *v1alpha1.MaintenancePool) { p.Spec.MaxUnavailable = new(intstr.FromInt32(1)) })
	g.Expect(cmd.Rollout(ctx, kc, &bytes.Buffer{}, cmd.RolloutOptions{Pool: hookedPool, Config: "os-hooked"})).To(Succeed())
	g.Expect(cmd.Resume(ctx, kc, &bytes.Buffer{}, hookedPool)).To(Succeed())
	for _, n := range c.Nodes() {
		g.Eventually(func(g Gomega) {
			// Settled; the others show their requests withdrawn.
			st := readNode(g, kc, n.Name())
			g.Expect(st.Ready).To(BeTrue(), "%s Ready", n.Name())
			g.Expect(st.Unschedulable).To(BeFalse(), "%s uncordoned", n.Name())
			g.Expect(st.Admission).To(BeNil())
			g.Expect(st.Approved).To(BeEmpty())
			g.Expect(st.Hook).To(BeNil())
			g.Expect(st.Current()).To(BeNil(), "no request outstanding")
			g.Expect(st.CurrentConfig).To(Equal("os-hooked"), n.Name())
		}, 2*timeout, time.Second).Should(Succeed())
	}
	for _, n := range c.Nodes() {
		want := bootsBefore[n.Name()]
		if n.Name() == bad {
			want += 2
		}
		g.Expect(n.Boots()).To(Equal(want), "boots of %s", n.Name())
	}
	most, moments := watcher.MostUnavailable()
	g.Expect(most).To(Equal(1), "the watcher saw one node at a time unavailable (over %d changes)", moments)
}

// aGateHoldsTheDrain: a beforeDrain acknowledgement held by the test, as
// another controller would hold it, keeps the node's drain from starting:
// its pod stays, its reboot waits. Relabelled meanwhile into a pool without
// hooks, as anyone who may patch Nodes could, the node stays with the pool
// that admitted it and still waits: not drained, not approved. A user who
// may patch Nodes cannot acknowledge it; the controller RBAC lets
// acknowledge the pool's hook writes this admission's token, and the node
// reboots once.
func aGateHoldsTheDrain(t *testing.T, c *realcluster.Cluster, kc client.Client) {
	g := NewWithT(t)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.RestConfig())
	g.Expect(err).NotTo(HaveOccurred())
	target := c.Nodes()[len(c.Nodes())-1]
	labelNodes(t, kc, "gated", target.Name())
	pool := gen.Pool("gated", intstr.FromInt32(1))
	pool.Spec.Hooks = &v1alpha1.Hooks{BeforeDrain: []v1alpha1.Hook{{Name: "db-stepdown", Acknowledgement: &v1alpha1.HookAcknowledgement{}}}}
	createPool(t, kc, pool)
	createPool(t, kc, gen.Pool("ungated", intstr.FromInt32(1)))
	ns := testNamespace(t, cs, "hooks-gate")
	pod := slowPodOn(t, cs, ns, target.Name())

	bootsBefore := bootCounts(c)
	nm, err := cmd.Request(ctx, kc, &bytes.Buffer{}, cmd.RequestOptions{Node: target.Name(), Reason: "a gate holds the drain"})
	g.Expect(err).NotTo(HaveOccurred())
	var token string
	g.Eventually(func(g Gomega) {
		st := readNode(g, kc, target.Name())
		g.Expect(st.Unschedulable).To(BeTrue())
		g.Expect(st.Hook).NotTo(BeNil())
		g.Expect(st.Hook.Waiting()).To(Equal([]string{"db-stepdown"}))
		g.Expect(st.Hook.Pool).To(Equal("gated"))
		token = st.Hook.Token
	}, timeout, time.Second).Should(Succeed())
	setPoolLabel(g, kc, target.Name(), "ungated")
	g.Consistently(func(g Gomega) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.DeletionTimestamp).To(BeNil(), "evicted before the gate opened")
		st := readNode(g, kc, target.Name())
		g.Expect(st.Approved).To(BeEmpty())
		g.Expect(st.Hook).NotTo(BeNil(), "the hook record was dropped")
		g.Expect(st.Hook.Waiting()).To(Equal([]string{"db-stepdown"}))
	}, 15*time.Second, time.Second).Should(Succeed())
	var ungated v1alpha1.MaintenancePool
	g.Expect(kc.Get(ctx, client.ObjectKey{Name: "ungated"}, &ungated)).To(Succeed())
	g.Expect(ungated.Status.Nodes).To(BeZero(), "the pool its labels name does not take it")

	// Only the hook's owner may acknowledge it: a user who may patch Nodes
	// is refused; the controller RBAC lets acknowledge pool gated's
	// db-stepdown may.
	ack := func(c client.Client) error {
		raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{protocol.AckPrefix + "db-stepdown": token}}})
		g.Expect(err).NotTo(HaveOccurred())
		return c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: target.Name()}}, client.RawPatch(types.MergePatchType, raw))
	}
	err = ack(nodePatcher(t, g, c, "hook-mallory"))
	g.Expect(err).To(MatchError(ContainSubstring("ValidatingAdmissionPolicy 'kmaint-hook-acknowledgements'")))
	owner := nodePatcher(t, g, c, "db-controller")
	g.Expect(kc.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "db-controller-acknowledges"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"kmaint.io"}, Resources: []string{"hookacknowledgements"}, ResourceNames: []string{"gated/db-stepdown"}, Verbs: []string{"update"},
	}}})).To(Succeed())
	g.Expect(kc.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "db-controller-acknowledges"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "db-controller-acknowledges"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "db-controller"}},
	})).To(Succeed())
	g.Eventually(func() error { return ack(owner) }, timeout, time.Second).Should(Succeed(), "the hook's owner acknowledges")
	expectSucceeded(g, kc, nm)
	g.Eventually(func(g Gomega) { settledNode(g, kc, target.Name()) }, timeout, time.Second).Should(Succeed())
	expectRebootedOnce(g, c, bootsBefore, target)
}

// poolJobs lists the hook Jobs made for a pool.
func poolJobs(g Gomega, kc client.Client, pool string) []batchv1.Job {
	var list batchv1.JobList
	g.Expect(kc.List(context.Background(), &list, client.InNamespace(hooksNamespace))).To(Succeed())
	var out []batchv1.Job
	for _, j := range list.Items {
		if j.Annotations[hooks.PoolAnnotation] == pool {
			out = append(out, j)
		}
	}
	return out
}

// hostFile reads a file the hook Jobs wrote on the node's host.
func hostFile(g Gomega, n *realcluster.Node, name string) string {
	out, err := n.Exec(context.Background(), "cat", hookHostDir+"/"+name)
	g.Expect(err).NotTo(HaveOccurred(), "%s on %s", name, n.Name())
	return strings.TrimSpace(string(out))
}

// expectHookTimes: each node's config request of the rollout begun at
// began keeps when its node reached its hooks and when they passed, for
// the rollout report.
func expectHookTimes(g Gomega, kc client.Client, began time.Time, nodes []*realcluster.Node) {
	var list v1alpha1.NodeMaintenanceList
	g.Expect(kc.List(context.Background(), &list)).To(Succeed())
	seen := map[string]bool{}
	for _, nm := range list.Items {
		if nm.Spec.Source != v1alpha1.SourceConfig || nm.CreationTimestamp.Time.Before(began.Truncate(time.Second)) {
			continue
		}
		seen[nm.Spec.NodeName] = true
		g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), nm.Name)
		g.Expect(nm.Status.HookTimes).To(HaveLen(2), "%s: %+v", nm.Name, nm.Status.HookTimes)
		stage, check := nm.Status.HookTimes[0], nm.Status.HookTimes[1]
		g.Expect(stage.Point).To(Equal("beforeReboot"))
		g.Expect(stage.Passed).NotTo(BeNil(), "%s: the stage Job passed", nm.Name)
		g.Expect(stage.Passed.Sub(stage.Started.Time)).To(BeNumerically(">=", 5*time.Second), "%s: the stage Job sleeps 6 s", nm.Name)
		g.Expect(check.Point).To(Equal("afterReboot"))
		g.Expect(check.Started.After(stage.Passed.Time)).To(BeTrue(), "%s: checked after the reboot", nm.Name)
	}
	for _, n := range nodes {
		g.Expect(seen).To(HaveKey(n.Name()), "a config request of the rollout on %s", n.Name())
	}
}
