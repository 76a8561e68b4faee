package poolnodes

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
)

// Member is one node a pool holds, as protocol.Read tells it.
type Member struct {
	protocol.NodeState
	// OtherPools names the other pools that select the node too: no pool
	// admits it then.
	OtherPools []string
}

// Nodes are a pool's nodes at one reconcile.
type Nodes struct {
	// Members are the pool's nodes (pools.Of: those its selector selects,
	// and those in flight it admitted, whatever their labels say now), by
	// name. They are the entries Kept keeps between reconciles, not copies:
	// read them, and replace one rather than change it.
	Members []*Member
}

// Capacity is how many members of a pool to make room for at once, of
// nodes there are: as many as the pool last counted. Grown one append at
// a time, the members of thousands of nodes (a few hundred bytes each)
// were copied again at every doubling, most of a reconcile's allocations;
// the status is only a hint, which anyone who may write it could set to -1
// or two billion.
func Capacity(pool *v1alpha1.MaintenancePool, nodes int) int {
	return min(max(int(pool.Status.Nodes), 0), nodes)
}

// ReadKept reads the pool's nodes (Nodes) as Kept.Walk finds them, in name
// order: the members kept between reconciles in k, made again only for
// the nodes that changed. A Member depends on nothing but its node and
// the selection.
func ReadKept(k *Kept[Member], d *Decoded, nodes []*corev1.Node, pool string, sel pools.Selection, capacity int) Nodes {
	// The members are the kept entries: a copy of each (a few hundred
	// bytes) at every reconcile was a third of the operator's allocations
	// at 5000 nodes.
	out := Nodes{Members: make([]*Member, 0, capacity)}
	// Making a Member never fails.
	_ = k.Walk(d, nodes, pool, sel, sel.Key(), func(s protocol.NodeState, others []string) (Member, error) {
		return Member{NodeState: s, OtherPools: others}, nil
	}, func(m *Member) { out.Members = append(out.Members, m) })
	return out
}
