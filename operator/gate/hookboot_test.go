package gate_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/test/gen"
)

// A node that reboots again while it waits at its afterReboot hook (same
// admission, a new boot: a crash, a person) waits there for the new boot:
// the acknowledgement its hook's owner writes for the boot it saw come
// back opens nothing, since the new boot's checks have not run. Only the
// boot tells the two tokens apart: the node, its pool, its admission and
// the point are the same (the acknowledgement test's earlier-boot token
// also has another admission time, and cannot tell).
func TestAnAcknowledgementOfTheBootBeforeOpensNoAfterRebootHook(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pool := gen.Pool("afterboot", intstr.FromInt32(1))
	pool.Spec.Hooks = &v1alpha1.Hooks{AfterReboot: []v1alpha1.Hook{ackHook("rejoin")}}
	createPool(t, pool)
	node := createNodes(t, "afterboot", "afterboot", 1)[0]
	daemons := runDaemons(t, "afterboot", false)
	startOperator(t)
	request(t, node, "r", time.Now())

	first := waitsAt(g, node, "afterboot", protocol.AfterReboot, "rejoin")
	g.Expect(hookRecord(g, node).BootID).To(Equal("boot-0-r1"))

	// It reboots again before the hook's owner acknowledged: the gate
	// waits at the hook for the new boot.
	g.Expect(gen.Reboot(ctx, bed.Client, node, "boot-0-r2", false)).To(Succeed())
	var second string
	g.Eventually(func(g Gomega) {
		rec := hookRecord(g, node)
		g.Expect(rec).NotTo(BeNil())
		g.Expect(rec.Point).To(Equal(protocol.AfterReboot))
		g.Expect(rec.BootID).To(Equal("boot-0-r2"))
		g.Expect(rec.Waiting()).To(Equal([]string{"rejoin"}))
		second = rec.Token
	}, timeout).Should(Succeed())

	// The owner acknowledges the boot it saw come back: late, and for a
	// boot that is gone.
	acknowledge(g, node, "rejoin", first)
	staysAt(g, node, protocol.AfterReboot, "rejoin")
	g.Expect(hookRecord(g, node).BootID).To(Equal("boot-0-r2"))

	acknowledge(g, node, "rejoin", second)
	g.Eventually(func(g Gomega) {
		g.Expect(getNode(g, node).Status.NodeInfo.BootID).To(Equal("boot-0-r2"))
		expectSettled(g, node, false)
	}, timeout).Should(Succeed())
	g.Expect(daemons.Count(node)).To(Equal(1), "kmaint asked for one reboot")
}
