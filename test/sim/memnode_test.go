package sim

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/daemon/journal"
	"github.com/kmaint/kmaint/test/gen"
)

// TestStoppedNodeStaysDownAfterItsReboot: a teardown stops every daemon and
// then deletes the nodes. A node that was rebooting when it was stopped must
// not come back after that: a kubelet report and a daemon started then
// would act on a cluster being torn down, and fill the log with errors
// about nodes that are gone.
func TestStoppedNodeStaysDownAfterItsReboot(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	const name = "stopped-mid-reboot"
	g.Expect(gen.CreateNode(ctx, bed.Client, gen.Node(name, gen.BootID("boot-1")))).To(Succeed())
	t.Cleanup(func() { _ = bed.Client.Delete(context.Background(), gen.Node(name)) })

	n := newMemNode(name, "boot-1", bed.Config, bed.Client, Timing{Reboot: 2 * time.Second}, bareHost{}, logr.Discard())
	rebooted := make(chan struct{})
	go func() {
		defer close(rebooted)
		n.reboot(ctx, "")
	}()

	// The node is down in its new boot: stop it then, as a teardown would.
	ready := func() (bool, string) {
		node := &corev1.Node{}
		g.Expect(bed.Client.Get(ctx, types.NamespacedName{Name: name}, node)).To(Succeed())
		return protocol.Ready(node), protocol.BootID(node)
	}
	g.Eventually(func() string {
		isReady, boot := ready()
		if isReady {
			return ""
		}
		return boot
	}).WithTimeout(30*time.Second).ShouldNot(Or(BeEmpty(), Equal("boot-1")), "the node goes down in a new boot")
	n.Stop()

	g.Eventually(rebooted).WithTimeout(30 * time.Second).Should(BeClosed())
	isReady, _ := ready()
	g.Expect(isReady).To(BeFalse(), "a node stopped while down is not reported Ready")
	n.mu.Lock()
	defer n.mu.Unlock()
	g.Expect(n.stop).To(BeNil(), "no daemon starts on a node stopped while down")
}

// bareHost is a cluster that asks nothing of a node's reboots.
type bareHost struct{}

func (bareHost) isFast(string) bool               { return false }
func (bareHost) rebootDelay(string) time.Duration { return 0 }
func (bareHost) beforeReboot(string)              {}
func (bareHost) afterReboot(string)               {}
func (bareHost) rebooted(Reboot)                  {}

// TestADaemonAskingAgainInItsBootIsTold: a daemon asks to reboot once per
// boot. A daemon started again in a boot whose reboot another asked for and
// journaled must not ask: if it does, the node tells it as an ask again
// (the soak's checker fails it). One started again after a daemon stopped
// between its ask and its journal entry asks again, as the daemon means to.
func TestADaemonAskingAgainInItsBootIsTold(t *testing.T) {
	g := NewWithT(t)
	host := &askHost{}
	n := newMemNode("asks", "boot-1", nil, nil, Timing{}, host, logr.Discard())
	n.IgnoreReboots(true)
	ask := func() { g.Expect((&memRebooter{n: n, boot: "boot-1"}).Reboot(t.Context())).To(Succeed()) }

	ask()
	ask() // its ask cut short before its journal entry: asks again
	g.Expect(host.again).To(BeZero())
	g.Expect(askJournal{Memory: n.journal, n: n}.Append(journal.Entry{Kind: journal.KindRebooting, Requests: []string{"r1"}, Time: time.Now()})).To(Succeed())
	ask()
	g.Expect(host.again).To(Equal(1), "asked again after the ask was journaled")
}

// askHost counts the asks again it is told of.
type askHost struct {
	bareHost
	again int
}

func (h *askHost) rebooted(r Reboot) {
	if r.Again {
		h.again++
	}
}
