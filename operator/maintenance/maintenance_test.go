package maintenance_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
	"github.com/kmaint/kmaint/test/harness"
	"github.com/kmaint/kmaint/test/testbed"
)

var bed *testbed.Bed

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &bed)) }

const timeout = 30 * time.Second

func newMaintenance(name, node string) *v1alpha1.NodeMaintenance {
	return &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: node, Reason: "kernel update"},
	}
}

func TestMaintenanceForMissingNodeFailsClearly(t *testing.T) {
	g := NewWithT(t)
	harness.StartOperator(t, bed)
	g.Expect(bed.Client.Create(context.Background(), newMaintenance("ghost", "no-such-node"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		nm := harness.GetMaintenance(g, bed, "ghost")
		g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseFailed))
		c := meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.SucceededCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(v1alpha1.NodeNotFoundReason))
		g.Expect(nm.Status.Message).To(ContainSubstring("no-such-node does not exist"))
		g.Expect(nm.Status.PhaseTimes.Failed).NotTo(BeNil())
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "NodeMaintenance", "ghost", "Warning") }, timeout).Should(ContainElement(v1alpha1.NodeNotFoundReason))
}

func TestSecondOpenMaintenanceForANodeIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(bed.Client.Create(ctx, gen.Pool("dup", intstr.FromInt32(1)))).To(Succeed())
	node := harness.CreateNodes(t, bed, "dup", "dup", 1)[0]
	harness.StartOperator(t, bed)

	g.Expect(bed.Client.Create(ctx, newMaintenance("dup-first", node))).To(Succeed())
	g.Eventually(func(g Gomega) v1alpha1.Phase { return harness.GetMaintenance(g, bed, "dup-first").Status.Phase }, timeout).
		Should(Equal(v1alpha1.PhasePending))
	g.Expect(bed.Client.Create(ctx, newMaintenance("dup-second", node))).To(Succeed())
	g.Eventually(func(g Gomega) {
		nm := harness.GetMaintenance(g, bed, "dup-second")
		g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseFailed))
		g.Expect(meta.FindStatusCondition(nm.Status.Conditions, v1alpha1.SucceededCondition).Reason).To(Equal(v1alpha1.DuplicateReason))
		g.Expect(nm.Status.Message).To(ContainSubstring("dup-first"))
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) []string {
		return harness.EventReasons(g, bed, "NodeMaintenance", "dup-second", "Warning")
	}, timeout).Should(ContainElement(v1alpha1.DuplicateReason))
	g.Expect(harness.GetMaintenance(g, bed, "dup-first").Status.Phase).To(Equal(v1alpha1.PhasePending), "the first one is unaffected")
}

// A request made in the API goes through every phase as the node side raises
// it, the gate admits, drains and approves it, and the node reboots.
func TestAPIRequestFollowsTheNodeThroughEveryPhase(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(bed.Client.Create(ctx, gen.Pool("life", intstr.FromInt32(1)))).To(Succeed())
	node := harness.CreateNodes(t, bed, "life", "life", 1)[0]
	harness.RunDaemons(t, bed, "life", false)
	harness.StartOperator(t, bed)

	nm := newMaintenance("life", node)
	g.Expect(bed.Client.Create(ctx, nm)).To(Succeed())
	g.Eventually(func(g Gomega) v1alpha1.Phase { return harness.GetMaintenance(g, bed, "life").Status.Phase }, timeout).
		Should(Equal(v1alpha1.PhasePending))

	// The daemon journals the request under the NodeMaintenance's UID and
	// raises it on the node.
	g.Expect(gen.Request(ctx, bed.Client, node, string(nm.UID), v1alpha1.SourceAPI, time.Now())).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := harness.GetMaintenance(g, bed, "life")
		g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		g.Expect(got.Status.BootIDBefore).To(Equal("boot-0"))
		g.Expect(got.Status.BootIDAfter).To(Equal("boot-0-r1"))
		g.Expect(got.Status.RequestID).To(Equal(string(nm.UID)))
		times := got.Status.PhaseTimes
		for name, ts := range map[string]*metav1.Time{"pending": times.Pending, "requested": times.Requested, "approved": times.Approved,
			"draining": times.Draining, "rebooting": times.Rebooting, "succeeded": times.Succeeded} {
			g.Expect(ts).NotTo(BeNil(), "time of phase %s", name)
		}
		g.Expect(times.Failed).To(BeNil())
		g.Expect(times.Pending.Time).NotTo(BeTemporally(">", times.Succeeded.Time))
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.SucceededCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	}, timeout).Should(Succeed())
	// The request succeeds as soon as the node is back; the gate uncordons
	// it in its own reconcile, maybe a moment later.
	g.Eventually(func(g Gomega) { harness.ExpectSettled(g, bed, node, false) }, timeout).Should(Succeed())
}

// TestAQuickRebootWritesNoPassingPhase: a node with nothing to drain is
// admitted, drained, approved and rebooting within a second. Its request
// is not written once per step on the way: Draining and Approved pass
// unwritten, and the next write stamps their times from the gate's
// admission, so the record still says when each began. Its success is no
// event on the request either.
func TestAQuickRebootWritesNoPassingPhase(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(bed.Client.Create(ctx, gen.Pool("quick", intstr.FromInt32(1)))).To(Succeed())
	node := harness.CreateNodes(t, bed, "quick", "quick", 1)[0]
	harness.RunDaemons(t, bed, "quick", false)
	harness.StartOperator(t, bed)

	wc, err := client.NewWithWatch(bed.Config, client.Options{Scheme: bed.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &v1alpha1.NodeMaintenanceList{}, client.MatchingFields{"metadata.name": "quick"})
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	var written []v1alpha1.Phase // the phase of every write, in order
	var last v1alpha1.NodeMaintenance

	nm := newMaintenance("quick", node)
	g.Expect(bed.Client.Create(ctx, nm)).To(Succeed())
	g.Eventually(func(g Gomega) v1alpha1.Phase { return harness.GetMaintenance(g, bed, "quick").Status.Phase }, timeout).
		Should(Equal(v1alpha1.PhasePending))
	g.Expect(gen.Request(ctx, bed.Client, node, string(nm.UID), v1alpha1.SourceAPI, time.Now())).To(Succeed())
	deadline := time.After(timeout)
	for last.Status.Phase != v1alpha1.PhaseSucceeded {
		select {
		case ev, ok := <-w.ResultChan():
			g.Expect(ok).To(BeTrue(), "the watch ended early")
			got, ok := ev.Object.(*v1alpha1.NodeMaintenance)
			g.Expect(ok).To(BeTrue(), "a watch event of %T: %v", ev.Object, ev.Object)
			if n := len(written); n == 0 || written[n-1] != got.Status.Phase {
				written = append(written, got.Status.Phase)
			}
			last = *got
		case <-deadline:
			t.Fatalf("the request did not succeed within %s; phases written: %v", timeout, written)
		}
	}
	g.Expect(written).NotTo(ContainElements(v1alpha1.PhaseDraining, v1alpha1.PhaseApproved), "phases written: %v", written)
	g.Expect(written).To(ContainElements(v1alpha1.PhasePending, v1alpha1.PhaseRequested, v1alpha1.PhaseSucceeded))
	times := last.Status.PhaseTimes
	g.Expect(times.Draining).NotTo(BeNil(), "the admission's time stands for Draining")
	g.Expect(times.Approved).NotTo(BeNil(), "the approval's time stands for Approved")
	g.Expect(times.Draining.Time).NotTo(BeTemporally(">", times.Approved.Time))
	g.Expect(times.Requested.Time).NotTo(BeTemporally(">", times.Draining.Time))

	// Nor does the reboot that went well cost an event on the request: the
	// node tells it, and the request's status.
	g.Eventually(func(g Gomega) []string { return harness.EventReasons(g, bed, "Node", node, "Normal") }, timeout).
		Should(ContainElement("RebootCompleted"))
	g.Consistently(func(g Gomega) []string { return harness.EventReasons(g, bed, "NodeMaintenance", "quick", "") }, 2*time.Second).
		Should(BeEmpty())
}

// Requests that start on the node (host, config) are recorded as
// NodeMaintenances, once each, however often the operator restarts.
func TestHostRequestsAreRecordedOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pool := gen.Pool("rec", intstr.FromInt32(1))
	pool.Spec.Paused = true // keep the requests open while the operator restarts
	g.Expect(bed.Client.Create(ctx, pool)).To(Succeed())
	node := harness.CreateNodes(t, bed, "rec", "rec", 1)[0]
	g.Expect(gen.Request(ctx, bed.Client, node, "3f2a9c1e-host", v1alpha1.SourceHost, time.Now())).To(Succeed())
	g.Expect(gen.Request(ctx, bed.Client, node, "cfg-os-2", v1alpha1.SourceConfig, time.Now())).To(Succeed())

	for range 2 {
		stop := harness.StartOperator(t, bed)
		g.Eventually(func(g Gomega) {
			mine := harness.MaintenancesOf(g, bed, node)
			g.Expect(mine).To(HaveLen(2))
			sources := map[v1alpha1.Source]string{}
			for _, nm := range mine {
				g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseRequested))
				g.Expect(nm.Status.BootIDBefore).To(Equal("boot-0"))
				g.Expect(nm.Spec.Reason).To(HavePrefix("test "))
				sources[nm.Spec.Source] = nm.Status.RequestID
			}
			g.Expect(sources).To(Equal(map[v1alpha1.Source]string{v1alpha1.SourceHost: "3f2a9c1e-host", v1alpha1.SourceConfig: "cfg-os-2"}))
		}, timeout).Should(Succeed())
		stop()
	}

	// Resume: both are satisfied by the one reboot.
	harness.RunDaemons(t, bed, "rec", true)
	harness.StartOperator(t, bed)
	harness.PatchPool(g, bed, "rec", func(p *v1alpha1.MaintenancePool) { p.Spec.Paused = false })
	g.Eventually(func(g Gomega) {
		mine := harness.MaintenancesOf(g, bed, node)
		for _, nm := range mine {
			g.Expect(nm.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded), nm.Name)
			g.Expect(strings.HasPrefix(nm.Name, node+"-")).To(BeTrue())
		}
		g.Expect(mine).To(HaveLen(2))
	}, timeout).Should(Succeed())
}

// A request raised outside its pool's windows says so, with when the next
// window opens, until it is admitted.
func TestWaitingRequestSaysUntilWhen(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// Twelve hours from now, for an hour: shut during the test.
	now := time.Now().UTC()
	opens := now.Truncate(time.Hour).Add(12 * time.Hour)
	pool := gen.Pool("wait", intstr.FromInt32(1))
	pool.Spec.Windows = []v1alpha1.MaintenanceWindow{{Schedule: fmt.Sprintf("0 %d * * *", opens.Hour()), Duration: metav1.Duration{Duration: time.Hour}}}
	g.Expect(bed.Client.Create(ctx, pool)).To(Succeed())
	node := harness.CreateNodes(t, bed, "wait", "wait", 1)[0]
	harness.StartOperator(t, bed)

	nm := newMaintenance("wait", node)
	g.Expect(bed.Client.Create(ctx, nm)).To(Succeed())
	g.Expect(gen.Request(ctx, bed.Client, node, string(nm.UID), v1alpha1.SourceAPI, now)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := harness.GetMaintenance(g, bed, "wait")
		g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhaseRequested))
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.WaitingCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(v1alpha1.OutsideWindowReason))
		g.Expect(got.Status.Message).To(ContainSubstring("the next opens at " + opens.Format(time.RFC3339)))
	}, timeout).Should(Succeed())

	// Paused as well: the pool's pause is what holds it first.
	harness.PatchPool(g, bed, "wait", func(p *v1alpha1.MaintenancePool) { p.Spec.Paused = true })
	g.Eventually(func(g Gomega) string {
		return meta.FindStatusCondition(harness.GetMaintenance(g, bed, "wait").Status.Conditions, v1alpha1.WaitingCondition).Reason
	}, timeout).Should(Equal(v1alpha1.PausedReason))
}
