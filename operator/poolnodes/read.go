package poolnodes

import (
	"cmp"
	"slices"

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
	// Members are the nodes the pool selects, by name.
	Members []Member
	// Elsewhere are the nodes the pool admitted, or whose slot they hold
	// while they settle, that another pool selects now: they count against
	// this pool's budget until they are done, and the pool they are in
	// drives them. OtherPools names the pools they are in.
	Elsewhere []Member
}

// Walk sorts nodes, every Node the cache holds, by name, and calls visit
// with each node of the pool: member when the pool selects it, else one it
// admitted that another pool selects now (otherPools names the pools the
// node is in besides this one, or all of them). It only reads the cached
// objects: a write copies first.
func (d *Decoded) Walk(nodes []*corev1.Node, pool string, sel pools.Selection, visit func(s protocol.NodeState, otherPools []string, member bool)) {
	// Sorted by name as pointers, the nodes come out in the order the gate
	// plans in; sorting what the callers build of them moved each whole
	// struct, a tenth of a reconcile at 500 nodes.
	slices.SortFunc(nodes, func(a, b *corev1.Node) int { return cmp.Compare(a.Name, b.Name) })
	for _, node := range nodes {
		st, in := d.StateAndPools(node, sel)
		if !slices.Contains(in, pool) {
			if admittedBy(st) == pool {
				visit(st, in, false)
			}
			continue
		}
		var others []string
		if len(in) > 1 {
			// A copy: the pools found are kept for the next reconcile.
			others = slices.DeleteFunc(slices.Clone(in), func(p string) bool { return p == pool })
		}
		visit(st, others, true)
	}
	d.ForgetGone(nodes)
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

// Read is Walk, collected; capacity is how many members to make room
// for at once (Capacity).
func (d *Decoded) Read(nodes []*corev1.Node, pool string, sel pools.Selection, capacity int) Nodes {
	out := Nodes{Members: make([]Member, 0, capacity)}
	d.Walk(nodes, pool, sel, func(s protocol.NodeState, others []string, member bool) {
		if member {
			out.Members = append(out.Members, Member{NodeState: s, OtherPools: others})
		} else {
			out.Elsewhere = append(out.Elsewhere, Member{NodeState: s, OtherPools: others})
		}
	})
	return out
}

// admittedBy is AdmittedBy of a node read already.
func admittedBy(st protocol.NodeState) string {
	switch {
	case st.Admission != nil:
		return st.Admission.Pool
	case st.Settle != nil:
		return st.Settle.Pool
	}
	return ""
}

// AdmittedBy names the pool that admitted the node, or whose slot it holds
// while it settles after its reboot; empty when none did or the record
// does not say.
func AdmittedBy(node *corev1.Node) string {
	var a protocol.Admission
	if ok, err := protocol.Decode(node, protocol.Admitted, &a); ok && err == nil {
		return a.Pool
	}
	var s protocol.Settle
	if ok, err := protocol.Decode(node, protocol.Settling, &s); ok && err == nil {
		return s.Pool
	}
	return ""
}
