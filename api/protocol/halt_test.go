package protocol_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// One rule says what halts a pool: a failed health check after the reboot,
// or a hook of the node's admission that failed for good with Halt; a
// hook's failure that releases the node, or a hook record left without an
// admission, halts nothing.
func TestHaltsPool(t *testing.T) {
	g := NewWithT(t)
	at := time.Date(2026, 12, 7, 10, 0, 0, 500, time.UTC)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	hook := func(onFailure string) *protocol.HookRecord {
		return &protocol.HookRecord{Point: protocol.AfterReboot, Hooks: []protocol.HookProgress{{Name: "smoke", Attempt: 1,
			Failure: &protocol.HookFailure{Reason: "HookTimeout", Message: "not passed within 1m", Time: at, OnFailure: onFailure}}}}
	}
	admitted := &protocol.Admission{BootID: "boot-0"}

	g.Expect(protocol.NodeState{Node: node}.HaltsPool()).To(BeNil())
	g.Expect(protocol.NodeState{Node: node, Admission: admitted, Hook: hook("Release")}.HaltsPool()).To(BeNil(), "a release halts nothing")
	g.Expect(protocol.NodeState{Node: node, Hook: hook("Halt")}.HaltsPool()).To(BeNil(), "a record of no admission halts nothing")

	h := protocol.NodeState{Node: node, Admission: admitted, Hook: hook("Halt")}.HaltsPool()
	g.Expect(h).NotTo(BeNil())
	g.Expect(h.Reason).To(Equal(v1alpha1.HookFailedReason))
	g.Expect(h.Entry.Node).To(Equal("n"))
	g.Expect(h.Entry.Check).To(Equal("smoke"))
	g.Expect(h.Entry.Value).To(Equal("HookTimeout"))
	g.Expect(h.Entry.Time.Time).To(Equal(at.Truncate(time.Second)))
	g.Expect(h.Message()).To(HavePrefix("node n: "))

	long := strings.Repeat("x", 40000)
	failed := &protocol.Settle{Failure: &protocol.HealthCheckFailure{Check: "up", Value: long, Time: at}}
	h = protocol.NodeState{Node: node, Settle: failed}.HaltsPool()
	g.Expect(h).NotTo(BeNil())
	g.Expect(h.Reason).To(Equal(v1alpha1.HealthCheckFailedReason))
	g.Expect(h.Entry.Check).To(Equal("up"))
	g.Expect(len(h.Entry.Value)).To(BeNumerically("<", 32768), "status.halt keeps a value within a condition message's bound")
	g.Expect(h.Message()).To(And(HavePrefix("node n failed: "), ContainSubstring(long)), "the sentence says it whole")
}
