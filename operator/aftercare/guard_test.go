package aftercare

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/operator/poolnodes"
)

func member(name string, failedAt time.Time) *poolnodes.Member {
	m := &poolnodes.Member{NodeState: protocol.NodeState{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}}}
	if !failedAt.IsZero() {
		m.Settle = &protocol.Settle{Failure: &protocol.HealthCheckFailure{Check: "errors", Value: "7", Time: failedAt}}
	}
	return m
}

// The halt lists the failed nodes of the pool (a node in flight it
// admitted among them, whatever its labels say now: pools.Of), oldest
// failure first, and no healthy node.
func TestHaltedNodesListsThePoolsOldestFirst(t *testing.T) {
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	st := &poolState{nodes: poolnodes.Nodes{
		Members: []*poolnodes.Member{member("here", at.Add(time.Minute)), member("healthy", time.Time{}), member("moved", at)},
	}}
	var got []string
	for _, n := range haltedNodes(st) {
		got = append(got, n.Node+"@"+n.Time.UTC().Format("15:04"))
	}
	if want := "[moved@12:00 here@12:01]"; fmt.Sprint(got) != want {
		t.Errorf("haltedNodes = %v, want %s", got, want)
	}
	if len(st.nodes.Members) != 3 {
		t.Errorf("haltedNodes changed the nodes: %d", len(st.nodes.Members))
	}
}
