package gate

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
)

// The OverBudget message names why each node counts: a node back from its
// reboot and settling is Ready and uncordoned, and counts for its settle,
// not as cordoned.
func TestUnavailableBecauseNamesEachWay(t *testing.T) {
	g := NewWithT(t)
	view := func(f func(*protocol.NodeState)) *nodeView {
		st := protocol.NodeState{Node: &corev1.Node{}, Ready: true}
		f(&st)
		return &nodeView{NodeState: st}
	}
	g.Expect(unavailableBecause(view(func(s *protocol.NodeState) { s.Settle = &protocol.Settle{} }))).To(Equal("settling after its reboot"))
	g.Expect(unavailableBecause(view(func(s *protocol.NodeState) { s.Ready = false }))).To(Equal("not Ready"))
	g.Expect(unavailableBecause(view(func(s *protocol.NodeState) { s.Unschedulable = true }))).To(Equal("cordoned"))
	g.Expect(unavailableBecause(&nodeView{NodeState: protocol.NodeState{Node: &corev1.Node{}, Ready: true}, inflight: true})).To(Equal("admitted"))
}
