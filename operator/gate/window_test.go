package gate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

// closedWindow opens twelve hours from now, for an hour: closed during the test.
func closedWindow() v1alpha1.MaintenanceWindow {
	h := (time.Now().UTC().Hour() + 12) % 24
	return v1alpha1.MaintenanceWindow{Schedule: fmt.Sprintf("0 %d * * *", h), Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "UTC"}
}

func TestClosedWindowHoldsRequestsUnlessTheyIgnoreWindows(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pool := gen.Pool("window", intstr.FromInt32(2))
	pool.Spec.Windows = []v1alpha1.MaintenanceWindow{closedWindow()}
	createPool(t, pool)
	nodes := createNodes(t, "window", "window", 2)
	daemons := runDaemons(t, "window", false)
	startOperator(t)

	request(t, nodes[0], "routine", time.Now())
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPool(g, "window").Status.Conditions, v1alpha1.BlockedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal("OutsideWindow"))
		g.Expect(c.Message).To(ContainSubstring("until"))
	}, timeout).Should(Succeed())
	g.Expect(getNode(g, nodes[0]).Annotations).NotTo(HaveKey(protocol.Admitted))

	// An emergency: a NodeMaintenance that may ignore windows, raised by the
	// node's daemon under its UID, is admitted at once.
	nm := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: "window-emergency"},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: nodes[1], Reason: "CVE fix", IgnoreWindows: true},
	}
	g.Expect(bed.Client.Create(ctx, nm)).To(Succeed())
	g.Expect(gen.Request(ctx, bed.Client, nodes[1], string(nm.UID), v1alpha1.SourceAPI, time.Now())).To(Succeed())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[1], false) }, timeout).Should(Succeed())
	g.Expect(daemons.Count(nodes[0])).To(Equal(0), "the routine request still waits for its window")
	g.Expect(getNode(g, nodes[0]).Annotations).NotTo(HaveKey(protocol.Admitted))
}

// A NodeMaintenance changed while its node waits is read again, though the
// node does not change: the gate keeps what a node's NodeMaintenances say
// until one of them does.
func TestARequestMadeToIgnoreWindowsWhileItWaitsIsAdmitted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pool := gen.Pool("window-edit", intstr.FromInt32(1))
	pool.Spec.Windows = []v1alpha1.MaintenanceWindow{closedWindow()}
	createPool(t, pool)
	nodes := createNodes(t, "window-edit", "window-edit", 1)
	daemons := runDaemons(t, "window-edit", false)
	startOperator(t)

	nm := &v1alpha1.NodeMaintenance{
		ObjectMeta: metav1.ObjectMeta{Name: "window-edit-kernel"},
		Spec:       v1alpha1.NodeMaintenanceSpec{NodeName: nodes[0], Reason: "kernel"},
	}
	g.Expect(bed.Client.Create(ctx, nm)).To(Succeed())
	g.Expect(gen.Request(ctx, bed.Client, nodes[0], string(nm.UID), v1alpha1.SourceAPI, time.Now())).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getPool(g, "window-edit").Status.Conditions, v1alpha1.BlockedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal("OutsideWindow"))
	}, timeout).Should(Succeed())
	node := getNode(g, nodes[0])
	g.Expect(node.Annotations).NotTo(HaveKey(protocol.Admitted))

	// It turns out to be an emergency: the request may ignore windows now.
	g.Eventually(func(g Gomega) {
		g.Expect(bed.Client.Get(ctx, client.ObjectKeyFromObject(nm), nm)).To(Succeed())
		nm.Spec.IgnoreWindows = true
		g.Expect(bed.Client.Update(ctx, nm)).To(Succeed())
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, nodes[0], false) }, timeout).Should(Succeed())
	g.Expect(daemons.Count(nodes[0])).To(Equal(1))
}

func TestOpenWindowAdmits(t *testing.T) {
	g := NewWithT(t)
	pool := gen.Pool("open-window", intstr.FromInt32(1))
	pool.Spec.Windows = []v1alpha1.MaintenanceWindow{closedWindow(), {Schedule: "* * * * *", Duration: metav1.Duration{Duration: time.Hour}}}
	createPool(t, pool)
	node := createNodes(t, "open-window", "open-window", 1)[0]
	runDaemons(t, "open-window", false)
	startOperator(t)
	request(t, node, "o", time.Now())
	g.Eventually(func(g Gomega) { expectRebootedOnce(g, node, false) }, timeout).Should(Succeed())
}

func TestUnreadableWindowAdmitsNothingAndSaysWhy(t *testing.T) {
	g := NewWithT(t)
	pool := gen.Pool("bad-window", intstr.FromInt32(1))
	pool.Spec.Windows = []v1alpha1.MaintenanceWindow{{Schedule: "0 2 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Mars/Olympus"}}
	createPool(t, pool)
	node := createNodes(t, "bad-window", "bad-window", 1)[0]
	startOperator(t)
	request(t, node, "b", time.Now())
	g.Eventually(func(g Gomega) {
		p := getPool(g, "bad-window")
		for _, typ := range []string{v1alpha1.BlockedCondition, v1alpha1.DegradedCondition} {
			c := meta.FindStatusCondition(p.Status.Conditions, typ)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal("InvalidWindow"))
			g.Expect(c.Message).To(ContainSubstring("Mars/Olympus"))
		}
		g.Expect(p.Status.Nodes).To(BeEquivalentTo(1))
		g.Expect(p.Status.PendingRequests).To(BeEquivalentTo(1))
	}, timeout).Should(Succeed())
	g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.Admitted))
}

// A node the gate writes in a pass (here its pool's new desiredConfig)
// keeps, for the rest of the pass, what only the gate knew of it: a node
// outside its window is not taken for one free to go the moment the
// rollout starts.
func TestAWriteInThePassKeepsTheNodesWindow(t *testing.T) {
	g := NewWithT(t)
	pool := gen.Pool("writewindow", intstr.FromInt32(1))
	pool.Spec.Windows = []v1alpha1.MaintenanceWindow{closedWindow()}
	pool.Spec.DesiredConfig = "v2"
	createPool(t, pool)
	node := createNodes(t, "writewindow", "writewindow", 1)[0]
	request(t, node, "kernel", time.Now())
	startOperator(t)
	g.Eventually(func(g Gomega) {
		g.Expect(getNode(g, node).Annotations).To(HaveKeyWithValue(protocol.DesiredConfig, "v2"))
	}, timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getNode(g, node).Annotations).NotTo(HaveKey(protocol.Admitted), "admitted outside its window")
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
}
