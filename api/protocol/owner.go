package protocol

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// InFlightPool names the pool a node in flight belongs to, and that pool's
// UID: the pool that admitted it, from its admission, or, once its reboot
// completed, the pool whose slot it holds while it settles. Until its
// maintenance ends a node stays with that pool whatever its labels say
// meanwhile (internal/pools.Of): anyone who may patch Nodes may relabel one,
// and a node that changed pools half-way would take the new pool's budget,
// drain and hooks, and skip the hooks its own pool waits for. Both records
// are the operator's alone (invariant 10).
//
// Empty when the node is in no maintenance, or its record names no pool
// (written before records named one) or cannot be read: the node is then
// where its labels put it, and a record that cannot be read keeps it from
// being admitted, approved or completed wherever that is.
func InFlightPool(node *corev1.Node) (string, types.UID) {
	var a Admission
	if ok, err := Decode(node, Admitted, &a); ok {
		if err != nil {
			return "", ""
		}
		return a.Pool, a.PoolUID
	}
	var s Settle
	if ok, err := Decode(node, Settling, &s); ok && err == nil {
		return s.Pool, s.PoolUID
	}
	return "", ""
}

// InFlightPool is InFlightPool of the node read.
func (s NodeState) InFlightPool() (string, types.UID) {
	switch {
	case s.Admission != nil:
		return s.Admission.Pool, s.Admission.PoolUID
	case s.Settle != nil:
		return s.Settle.Pool, s.Settle.PoolUID
	}
	return "", ""
}
