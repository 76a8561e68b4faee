package protocol

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// NodeHalt is why a node halts its pool: a health check it failed after
// its reboot, or a hook of its admission that failed for good with
// onFailure Halt. Aftercare lists it in the pool's status.halt and its
// Halted condition; the gate reads it from the node too, which its cache may
// show before the pool's new status, and admits no one meanwhile.
type NodeHalt struct {
	// Reason is the Halted condition's: HealthCheckFailed or HookFailed.
	Reason string
	// Entry is the node's entry of status.halt.nodes.
	Entry v1alpha1.HaltedNode
	// detail says what failed, whole.
	detail string
}

// HaltsPool is the node's halt of its pool; nil when it halts none. The one
// rule of what halts a pool, for the gate and aftercare alike.
func (s NodeState) HaltsPool() *NodeHalt {
	switch {
	case s.HealthCheckFailed():
		f := s.Settle.Failure
		return &NodeHalt{Reason: v1alpha1.HealthCheckFailedReason, detail: f.Message(), Entry: v1alpha1.HaltedNode{
			Node: s.Node.Name, Check: f.Check, Value: v1alpha1.FitMessage(f.Value),
			Message: v1alpha1.FitMessage(f.Message()), Time: metav1.NewTime(f.Time.Truncate(time.Second))}}
	case s.HookHalts():
		h := s.Hook.Failed()
		return &NodeHalt{Reason: v1alpha1.HookFailedReason, detail: s.Hook.Describe(), Entry: v1alpha1.HaltedNode{
			Node: s.Node.Name, Check: h.Name, Value: h.Failure.Reason,
			Message: v1alpha1.FitMessage(s.Hook.Describe()), Time: metav1.NewTime(h.Failure.Time.Truncate(time.Second))}}
	}
	return nil
}

// Message says the halt in a sentence that names the node.
func (h NodeHalt) Message() string {
	if h.Reason == v1alpha1.HealthCheckFailedReason {
		return fmt.Sprintf("node %s failed: %s", h.Entry.Node, h.detail)
	}
	return fmt.Sprintf("node %s: %s", h.Entry.Node, h.detail)
}
