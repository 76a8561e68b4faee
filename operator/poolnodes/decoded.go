package poolnodes

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/internal/pools"
)

// Decoded keeps each Node's protocol state as last decoded, by the
// version of the Node it was decoded from. Every reconcile of a pool reads
// every node of it, and decoding the protocol's JSON annotations again each
// time took 1.67 s of the 3.58 s of CPU the gate's reconciles used in a
// minute of the 500-node bench (pprof), although between two reconciles
// only the nodes that changed have new annotations.
//
// A state is shared by the reconciles that read the same version of a
// node: the controllers read the decoded annotations and never changes them, as
// it never changes the cached Node they came from. Code that changed a
// decoded state would change it for every reconcile that reads that version
// of the node; it copies first, as approvals and settle records do.
type Decoded struct {
	mu     sync.Mutex
	byNode map[string]decodedState
}

// decodedState is one node's state, without its Node: the state keeps
// neither an old version of the object alive nor the Node the cache holds.
type decodedState struct {
	uid             types.UID
	resourceVersion string
	state           protocol.NodeState
	// pools are the pools the node is in by the selection of selection,
	// a pools.Selection's Key; empty selection when not found yet.
	selection string
	pools     []string
}

// NewDecoded returns an empty store.
func NewDecoded() *Decoded {
	return &Decoded{byNode: map[string]decodedState{}}
}

// State returns protocol.Read(node), decoding only a version of the node it
// has not decoded before. A node without a resourceVersion (not from the
// API server) is always decoded. A nil Decoded decodes every time.
func (d *Decoded) State(node *corev1.Node) protocol.NodeState {
	if d == nil || node.ResourceVersion == "" {
		st, _ := protocol.Read(node)
		return st
	}
	d.mu.Lock()
	kept, ok := d.byNode[node.Name]
	d.mu.Unlock()
	if ok && kept.uid == node.UID && kept.resourceVersion == node.ResourceVersion {
		st := kept.state
		st.Node = node
		return st
	}
	// An unreadable node is kept, with its error: protocol.NodeState's
	// predicates keep it from being admitted, approved or completed.
	st, _ := protocol.Read(node)
	keep := st
	keep.Node = nil
	d.mu.Lock()
	d.byNode[node.Name] = decodedState{uid: node.UID, resourceVersion: node.ResourceVersion, state: keep}
	d.mu.Unlock()
	return st
}

// StateAndPools returns protocol.Read(node) as State does, and the pools
// the node is in (pools.Of), found again only for a version of the node
// or a selection it has not been found for. The pools are shared: read
// them, never change them.
func (d *Decoded) StateAndPools(node *corev1.Node, sel pools.Selection) (protocol.NodeState, []string) {
	st := d.State(node)
	if d == nil || node.ResourceVersion == "" {
		return st, ofState(node, st, sel)
	}
	key := sel.Key()
	d.mu.Lock()
	kept, ok := d.byNode[node.Name]
	d.mu.Unlock()
	if ok && kept.uid == node.UID && kept.resourceVersion == node.ResourceVersion && kept.selection == key && key != "" {
		return st, kept.pools
	}
	in := ofState(node, st, sel)
	d.mu.Lock()
	if kept, ok := d.byNode[node.Name]; ok && kept.uid == node.UID && kept.resourceVersion == node.ResourceVersion {
		kept.selection, kept.pools = key, in
		d.byNode[node.Name] = kept
	}
	d.mu.Unlock()
	return st, in
}

// Forget drops the state of a node the cache no longer holds.
func (d *Decoded) Forget(name string) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.byNode, name)
}

// ForgetGone drops the states of nodes not among nodes, every node the
// cache holds, once more states are kept than that: nodes deleted. It keeps
// no more states than the cache has nodes.
func (d *Decoded) ForgetGone(nodes []*corev1.Node) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	ForgetGone(d.byNode, nodes)
}

// ForgetGone deletes from byNode, kept by node name, the nodes not among
// nodes, every node the cache holds, once it holds more than that: nodes
// deleted. A map of what is known per node then never grows past the
// cluster, and is not walked at every reconcile.
func ForgetGone[V any](byNode map[string]V, nodes []*corev1.Node) {
	if len(byNode) <= len(nodes) {
		return
	}
	live := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		live[n.Name] = true
	}
	for name := range byNode {
		if !live[name] {
			delete(byNode, name)
		}
	}
}

// ofState is pools.Of of a node read already (st).
func ofState(node *corev1.Node, st protocol.NodeState, sel pools.Selection) []string {
	name, uid := st.InFlightPool()
	return pools.OfInFlight(node, sel, name, uid)
}
