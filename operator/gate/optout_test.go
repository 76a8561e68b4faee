package gate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/operator"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
)

// startOperatorQuickPods runs the operator with a short look-again interval
// for nodes their pods hold, so that a test sees a lifted hold promptly.
func startOperatorQuickPods(t *testing.T) {
	harness.StartOperatorWith(t, bed, operator.Options{BlockingPodInterval: time.Second})
}

// annotateNode sets (value non-nil) or removes an annotation on a node.
func annotateNode(g Gomega, name, key string, value *string) {
	n := getNode(g, name)
	base := n.DeepCopy()
	if value == nil {
		delete(n.Annotations, key)
	} else {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[key] = *value
	}
	g.Expect(bed.Client.Patch(context.Background(), n, client.MergeFrom(base))).To(Succeed())
}

// expectWaiting waits for the host request of the node to wait with reason
// and every one of the substrings.
func expectWaiting(g Gomega, node, reason string, substrings ...string) {
	g.Eventually(func(g Gomega) {
		nm := hostMaintenance(g, node)
		c := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.WaitingCondition)
		g.Expect(c).NotTo(BeNil(), "Waiting condition of %s", nm.Name)
		g.Expect(c.Reason).To(Equal(reason), "message %q", c.Message)
		for _, s := range substrings {
			g.Expect(c.Message).To(ContainSubstring(s))
		}
	}, timeout).Should(Succeed())
}

// expectOptedOut waits for the pool to count n opted-out nodes and name
// each of the substrings in its OptedOut condition.
func expectOptedOut(g Gomega, pool string, n int, substrings ...string) {
	g.Eventually(func(g Gomega) {
		p := getPool(g, pool)
		g.Expect(p.Status.OptedOut).To(BeEquivalentTo(n))
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.OptedOutCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		for _, s := range substrings {
			g.Expect(c.Message).To(ContainSubstring(s))
		}
	}, timeout).Should(Succeed())
}

// A node annotated do-not-disrupt waits with its reason, the next node takes
// its turn, and once the annotation is removed it reboots.
func TestDoNotDisruptNodeWaitsAndPassesItsTurn(t *testing.T) {
	g := NewWithT(t)
	createPool(t, gen.Pool("dnd", intstr.FromInt32(1)))
	nodes := createNodes(t, "dnd", "dnd", 2)
	reason := "database migration until 14:00, ask #dba"
	annotateNode(g, nodes[0], protocol.DoNotDisrupt, &reason)
	daemons := runDaemons(t, "dnd", false)
	startOperator(t)

	request(t, nodes[0], "dnd-0", time.Now().Add(-time.Minute)) // first in line
	request(t, nodes[1], "dnd-1", time.Now())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[1], false) }, timeout).Should(Succeed())
	expectWaiting(g, nodes[0], v1alpha1.DoNotDisruptReason, protocol.DoNotDisrupt, reason)
	expectOptedOut(g, "dnd", 1, nodes[0], reason)
	expectBlocked(g, "dnd", v1alpha1.OptedOutReason, reason)
	g.Expect(daemons.Count(nodes[0])).To(Equal(0))
	g.Expect(getNode(g, nodes[0]).Annotations).NotTo(HaveKey(protocol.Admitted))

	annotateNode(g, nodes[0], protocol.DoNotDisrupt, nil)
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[0], false) }, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) int32 { return getPool(g, "dnd").Status.OptedOut }, timeout).Should(BeZero())
}

// Careless values: an empty one, "false" (a reason, not a switch: the
// annotation must go), a huge one (quoted short), Karpenter's "true" on the
// node. None is rebooted; a Karpenter value other than "true" holds nothing.
func TestDoNotDisruptValuesOnNodes(t *testing.T) {
	g := NewWithT(t)
	createPool(t, gen.Pool("dndv", intstr.FromInt32(5)))
	nodes := createNodes(t, "dndv", "dndv", 5)
	empty, no, huge, yes, notTrue := "", "false", strings.Repeat("x", 100_000), "true", "false"
	annotateNode(g, nodes[0], protocol.DoNotDisrupt, &empty)
	annotateNode(g, nodes[1], protocol.DoNotDisrupt, &no)
	annotateNode(g, nodes[2], protocol.DoNotDisrupt, &huge)
	annotateNode(g, nodes[3], protocol.KarpenterDoNotDisrupt, &yes)
	annotateNode(g, nodes[4], protocol.KarpenterDoNotDisrupt, &notTrue)
	daemons := runDaemons(t, "dndv", false)
	startOperator(t)
	for i, n := range nodes {
		request(t, n, "dndv-"+string(rune('a'+i)), time.Now())
	}
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[4], false) }, timeout).Should(Succeed())
	expectWaiting(g, nodes[0], v1alpha1.DoNotDisruptReason, "(no reason given)")
	expectWaiting(g, nodes[1], v1alpha1.DoNotDisruptReason, `"false"`, "until the annotation is removed")
	expectWaiting(g, nodes[2], v1alpha1.DoNotDisruptReason, "(over 256 bytes)")
	expectWaiting(g, nodes[3], v1alpha1.DoNotDisruptReason, protocol.KarpenterDoNotDisrupt+"=true")
	expectOptedOut(g, "dndv", 4)
	c := meta.FindStatusCondition(getPool(g, "dndv").Status.Conditions, v1alpha1.OptedOutCondition)
	g.Expect(len(c.Message)).To(BeNumerically("<", 4096), "a huge value is quoted short")
	for _, n := range nodes[:4] {
		g.Expect(daemons.Count(n)).To(BeZero(), n)
	}
}

// Pods hold their node: kmaint's and Karpenter's do-not-disrupt, and the
// pool's blockingPodSelector; a finished pod holds nothing. A held node
// passes its turn, and once its pod is gone it reboots, with no other event
// to wake the pool.
func TestPodsHoldTheirNode(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	harness.CreateNamespace(t, bed, "hold")
	pool := gen.Pool("hold", intstr.FromInt32(1))
	pool.Spec.BlockingPodSelector = &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.SelectorValue{"app": "batch-job"}}
	createPool(t, pool)
	nodes := createNodes(t, "hold", "hold", 4)
	pod := func(name, node string, labels, annotations map[string]string) *corev1.Pod {
		p := gen.Pod("hold", name, node, labels)
		p.Annotations = annotations
		g.Expect(gen.CreatePod(ctx, bed.Client, p)).To(Succeed())
		return p
	}
	critical := pod("critical", nodes[0], nil, map[string]string{protocol.DoNotDisrupt: "payment batch"})
	karpenter := pod("karpenter", nodes[1], nil, map[string]string{protocol.KarpenterDoNotDisrupt: "true"})
	job := pod("job", nodes[2], map[string]string{"app": "batch-job"}, nil)
	done := pod("done-job", nodes[3], map[string]string{"app": "batch-job"}, nil)
	g.Eventually(func() error {
		if err := bed.Client.Get(ctx, client.ObjectKeyFromObject(done), done); err != nil {
			return err
		}
		done.Status.Phase = corev1.PodSucceeded
		return bed.Client.Status().Update(ctx, done)
	}, timeout).Should(Succeed())
	daemons := runDaemons(t, "hold", false)
	startOperatorQuickPods(t)

	for i, n := range nodes {
		request(t, n, "hold-"+string(rune('a'+i)), time.Now().Add(time.Duration(i-10)*time.Second))
	}
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[3], false) }, timeout).Should(Succeed())
	expectWaiting(g, nodes[0], v1alpha1.DoNotDisruptReason, "pod hold/critical", `"payment batch"`)
	expectWaiting(g, nodes[1], v1alpha1.DoNotDisruptReason, "pod hold/karpenter", protocol.KarpenterDoNotDisrupt+"=true")
	expectWaiting(g, nodes[2], v1alpha1.BlockingPodReason, "pod hold/job", "blockingPodSelector")
	expectOptedOut(g, "hold", 3, "hold/critical", "hold/karpenter", "hold/job")
	expectBlocked(g, "hold", v1alpha1.OptedOutReason)
	for _, n := range nodes[:3] {
		g.Expect(getNode(g, n).Annotations).To(HaveKey(protocol.AdmissionHeld), n)
		g.Expect(daemons.Count(n)).To(BeZero(), n)
	}

	// Each pod that goes lets its node through, in turn: the pool looks
	// again by itself.
	for i, p := range []*corev1.Pod{critical, karpenter, job} {
		g.Expect(bed.Client.Delete(ctx, p, client.GracePeriodSeconds(0))).To(Succeed())
		g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[i], false) }, timeout).Should(Succeed())
	}
	g.Eventually(func(g Gomega) int32 { return getPool(g, "hold").Status.OptedOut }, timeout).Should(BeZero())
}

// A selector that matches every pod on the nodes holds every node, says
// which pods, and reboots nothing.
func TestBlockingPodSelectorMatchingEverythingRebootsNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	harness.CreateNamespace(t, bed, "hold-all")
	pool := gen.Pool("hold-all", intstr.FromInt32(2))
	pool.Spec.BlockingPodSelector = &v1alpha1.LabelSelector{MatchExpressions: []v1alpha1.LabelSelectorRequirement{
		{Key: "no-such-label", Operator: metav1.LabelSelectorOpDoesNotExist},
	}}
	createPool(t, pool)
	nodes := createNodes(t, "hold-all", "hold-all", 2)
	for _, n := range nodes {
		for _, name := range []string{"a", "b", "c", "d"} {
			g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod("hold-all", n+"-"+name, n, nil))).To(Succeed())
		}
	}
	daemons := runDaemons(t, "hold-all", false)
	startOperatorQuickPods(t)
	for i, n := range nodes {
		request(t, n, "hold-all-"+string(rune('a'+i)), time.Now())
	}
	expectOptedOut(g, "hold-all", 2, "and 1 more pods")
	expectBlocked(g, "hold-all", v1alpha1.OptedOutReason, "blockingPodSelector")
	expectWaiting(g, nodes[0], v1alpha1.BlockingPodReason, "hold-all/"+nodes[0]+"-a")
	for _, n := range nodes {
		g.Expect(daemons.Count(n)).To(BeZero())
		g.Expect(getNode(g, n).Annotations).NotTo(HaveKey(protocol.Admitted))
	}
}

// A node annotated do-not-disrupt while it drains is let go before its
// approval: uncordoned, its request waiting again, not failed; lifted, it
// reboots once.
func TestDoNotDisruptWhileDrainingReleasesTheNode(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	harness.CreateNamespace(t, bed, "dnd-drain")
	createPool(t, gen.Pool("dnd-drain", intstr.FromInt32(1)))
	node := createNodes(t, "dnd-drain", "dnd-drain", 1)[0]
	g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod("dnd-drain", "db-0", node, map[string]string{"app": "db"}))).To(Succeed())
	g.Expect(gen.PDB(ctx, bed.Client, "dnd-drain", "db", map[string]string{"app": "db"}, 0)).To(Succeed())
	daemons := runDaemons(t, "dnd-drain", false)
	startOperator(t)

	request(t, node, "dnd-drain", time.Now())
	g.Eventually(func(g Gomega) map[string]string { return getNode(g, node).Annotations }, timeout).Should(HaveKey(protocol.Admitted))
	reason := "on-call is debugging this node"
	annotateNode(g, node, protocol.DoNotDisrupt, &reason)
	g.Eventually(func(g Gomega) {
		n := getNode(g, node)
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.Admitted))
		g.Expect(n.Annotations).NotTo(HaveKey(protocol.DrainFailed))
		g.Expect(n.Spec.Unschedulable).To(BeFalse())
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "Node", node, "Normal") }, timeout).
		Should(ContainElement(v1alpha1.DoNotDisruptReason))
	expectWaiting(g, node, v1alpha1.DoNotDisruptReason, reason)
	g.Expect(hostMaintenance(g, node).Status.Phase).To(Equal(v1alpha1.PhaseRequested))

	setPDBAllowed(g, "dnd-drain", "db", 1)
	annotateNode(g, node, protocol.DoNotDisrupt, nil)
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, node, false) }, timeout).Should(Succeed())
	g.Expect(daemons.Count(node)).To(Equal(1))
}

// countingReader counts the pod Lists the gate makes, by node, and the
// Lists that would read every pod from etcd if the API server's watch cache
// lagged: consistent reads (no resourceVersion) of more than one pod.
type countingReader struct {
	client.Reader
	mu           sync.Mutex
	lists        map[string]int
	etcdFallible []string
	// reads lists, in order, each read of the pods' version ("version")
	// and the node of each List of a node's pods.
	reads []string
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	raw := o.AsListOptions()
	c.mu.Lock()
	if o.FieldSelector != nil {
		if node, ok := o.FieldSelector.RequiresExactMatch("spec.nodeName"); ok {
			c.lists[node]++
			c.reads = append(c.reads, node)
		}
	}
	if raw.ResourceVersion == "" && raw.Limit != 1 {
		c.etcdFallible = append(c.etcdFallible, raw.String())
	}
	if raw.Limit == 1 && o.FieldSelector == nil {
		c.reads = append(c.reads, "version")
	}
	c.mu.Unlock()
	return c.Reader.List(ctx, list, opts...)
}

func (c *countingReader) count(node string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lists[node]
}

// What the pod checks cost (issue 16: thousands of nodes): pods are listed
// only for a node whose turn has come, once per interval while it is held
// however often its pool reconciles, and never for nodes the budget or a
// pause keeps waiting.
func TestPodsAreListedOnlyWhenANodesTurnComes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	harness.CreateNamespace(t, bed, "turn")
	createPool(t, gen.Pool("turn", intstr.FromInt32(1)))
	createPool(t, gen.Pool("turn-paused", intstr.FromInt32(1)))
	harness.PatchPool(g, bed, "turn-paused", func(p *v1alpha1.MaintenancePool) { p.Spec.Paused = true })
	nodes := createNodes(t, "turn", "turn", 3)
	paused := createNodes(t, "turn-paused", "turn-paused", 1)[0]
	g.Expect(gen.CreatePod(ctx, bed.Client, gen.Pod("turn", "keep", nodes[0], nil))).To(Succeed())
	keep := &corev1.Pod{}
	g.Expect(bed.Client.Get(ctx, client.ObjectKey{Namespace: "turn", Name: "keep"}, keep)).To(Succeed())
	keep.Annotations = map[string]string{protocol.DoNotDisrupt: "pinned"}
	g.Expect(bed.Client.Update(ctx, keep)).To(Succeed())
	pods := &countingReader{Reader: bed.Client, lists: map[string]int{}}
	startGate(t, gateOptions{pods: pods, podInterval: time.Hour})

	request(t, nodes[0], "turn-0", time.Now())
	request(t, paused, "turn-p", time.Now())
	g.Eventually(func(g Gomega) map[string]string { return getNode(g, nodes[0]).Annotations }, timeout).Should(HaveKey(protocol.AdmissionHeld))
	// Many reconciles of the pool: each node change wakes it.
	for i := range 5 {
		v := "v" + string(rune('0'+i))
		annotateNode(g, nodes[2], "touched", &v)
	}
	request(t, nodes[1], "turn-1", time.Now())
	g.Eventually(func(g Gomega) map[string]string { return getNode(g, nodes[1]).Annotations }, timeout).Should(HaveKey(protocol.Admitted))
	// With nodes[1] admitted the budget is full: nodes[2]'s request waits
	// its turn, and its pods are not looked at.
	request(t, nodes[2], "turn-2", time.Now())
	g.Eventually(func(g Gomega) int32 { return getPool(g, "turn").Status.PendingRequests }, timeout).Should(BeEquivalentTo(2))
	expectBlocked(g, "turn-paused", v1alpha1.PausedReason)

	g.Expect(pods.count(nodes[0])).To(Equal(1), "one List per interval for a held node")
	g.Expect(pods.count(nodes[1])).To(Equal(1), "one List when its turn came")
	g.Expect(pods.count(nodes[2])).To(BeZero(), "no List while the budget is full")
	g.Expect(pods.count(paused)).To(BeZero(), "no List in a paused pool")
	pods.mu.Lock()
	defer pods.mu.Unlock()
	g.Expect(pods.etcdFallible).To(BeEmpty(), "a node's pods are listed from the watch cache")
}

// A reconcile that passes over a node its pods hold, and checks the next
// node's pods, reads the pods' version once for both: each read is a
// consistent read the API server serves only once its watch cache caught up.
func TestAReconcileReadsThePodsVersionOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	harness.CreateNamespace(t, bed, "once")
	createPool(t, gen.Pool("once", intstr.FromInt32(1)))
	nodes := createNodes(t, "once", "once", 2)
	keep := gen.Pod("once", "keep", nodes[0], nil)
	keep.Annotations = map[string]string{protocol.DoNotDisrupt: "pinned"}
	g.Expect(gen.CreatePod(ctx, bed.Client, keep)).To(Succeed())
	// Both wait before the gate starts, nodes[0] first in line: the gate's
	// first reconcile finds nodes[0] held and admits nodes[1].
	request(t, nodes[0], "once-0", time.Now().Add(-time.Minute))
	request(t, nodes[1], "once-1", time.Now())
	pods := &countingReader{Reader: bed.Client, lists: map[string]int{}}
	startGate(t, gateOptions{pods: pods, podInterval: time.Hour})

	g.Eventually(func(g Gomega) map[string]string { return getNode(g, nodes[1]).Annotations }, timeout).Should(HaveKey(protocol.Admitted))
	// The reconcile writes the admission first and why a node is held
	// after it: the held note may land a moment later.
	g.Eventually(func(g Gomega) map[string]string { return getNode(g, nodes[0]).Annotations }, timeout).Should(HaveKey(protocol.AdmissionHeld))
	pods.mu.Lock()
	defer pods.mu.Unlock()
	// A reconcile that failed for another reason (a conflict on a loaded
	// API server) is taken again, and checks a node not admitted yet
	// anew: only the reconcile that checked both is asserted on,
	// whichever it was. Its read of the version may be one made a moment
	// before (podcheck.versionReuse), but none is made between the two checks.
	g.Expect(pods.reads).To(ContainElement("version"))
	g.Expect(strings.Join(pods.reads, " ")).To(ContainSubstring(nodes[0]+" "+nodes[1]),
		"one read of the pods' version for both checks of one reconcile")
}

// barrierReader lets no List of a node's pods through until want of them
// are under way at once, or a while went by (then it fails the List, which
// holds the node).
type barrierReader struct {
	client.Reader
	want    int
	mu      sync.Mutex
	waiting int
	open    chan struct{}
}

func (b *barrierReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	if o.FieldSelector == nil {
		return b.Reader.List(ctx, list, opts...) // not of a node
	}
	b.mu.Lock()
	b.waiting++
	if b.waiting == b.want {
		close(b.open)
	}
	b.mu.Unlock()
	select {
	case <-b.open:
		return b.Reader.List(ctx, list, opts...)
	case <-time.After(10 * time.Second):
		return errors.New("the other Lists of the wave never came")
	}
}

// A wave of admissions lists its nodes' pods together, not one after
// another (issue 16: 100 Lists in turn held a 2000-node pool's reconcile
// for seconds on a busy API server).
func TestAWaveOfAdmissionsListsItsNodesPodsTogether(t *testing.T) {
	g := NewWithT(t)
	createPool(t, gen.Pool("wave", intstr.FromInt32(3)))
	nodes := createNodes(t, "wave", "wave", 3)
	for i, node := range nodes {
		request(t, node, fmt.Sprintf("wave-%d", i), time.Now())
	}
	startGate(t, gateOptions{pods: &barrierReader{Reader: bed.Client, want: 3, open: make(chan struct{})}, podInterval: time.Hour})

	for _, node := range nodes {
		g.Eventually(func(g Gomega) map[string]string { return getNode(g, node).Annotations }, timeout).Should(HaveKey(protocol.Admitted))
		g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.AdmissionHeld))
	}
}

// brokenPods fails the Lists of pods the gate makes: the read of the pods'
// version (one pod, no selector) when version is set, else the Lists of a
// node's pods.
type brokenPods struct {
	client.Reader
	version bool
}

func (b brokenPods) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	if (o.FieldSelector == nil) == b.version {
		return errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	}
	return b.Reader.List(ctx, list, opts...)
}

// Fail closed: a node whose pods cannot be seen, because the pods' version
// or the node's pods cannot be read, is not admitted, and says why.
func TestANodeWhosePodsCannotBeListedIsNotAdmitted(t *testing.T) {
	for name, version := range map[string]bool{"version": true, "pods": false} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			pool := "unlisted-" + name
			createPool(t, gen.Pool(pool, intstr.FromInt32(1)))
			node := createNodes(t, pool, pool, 1)[0]
			startGate(t, gateOptions{pods: brokenPods{Reader: bed.Client, version: version}, podInterval: time.Hour})

			request(t, node, pool+"-r", time.Now())
			g.Eventually(func(g Gomega) string { return getNode(g, node).Annotations[protocol.AdmissionHeld] }, timeout).Should(And(
				ContainSubstring(v1alpha1.BlockingPodReason), ContainSubstring("cannot be listed"), ContainSubstring("connection refused")))
			g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.Admitted))
			g.Expect(getNode(g, node).Spec.Unschedulable).To(BeFalse(), "not cordoned")
		})
	}
}
