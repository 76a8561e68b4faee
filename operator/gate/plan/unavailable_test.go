package plan

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/operator/gate/view"
)

// The OverBudget message names why each node counts: a node back from its
// reboot and settling is Ready and uncordoned, and counts for its settle,
// not as cordoned.
func TestUnavailableBecauseNamesEachWay(t *testing.T) {
	g := NewWithT(t)
	node := func(f func(*protocol.NodeState)) *view.Node {
		st := protocol.NodeState{Node: &corev1.Node{}, Ready: true}
		f(&st)
		return &view.Node{NodeState: st}
	}
	g.Expect(UnavailableBecause(node(func(s *protocol.NodeState) { s.Settle = &protocol.Settle{} }))).To(Equal("settling after its reboot"))
	g.Expect(UnavailableBecause(node(func(s *protocol.NodeState) { s.Ready = false }))).To(Equal("not Ready"))
	g.Expect(UnavailableBecause(node(func(s *protocol.NodeState) { s.Unschedulable = true }))).To(Equal("cordoned"))
	g.Expect(UnavailableBecause(&view.Node{NodeState: protocol.NodeState{Node: &corev1.Node{}, Ready: true}, AdmittedUnseen: true})).To(Equal("admitted"))
}
