package waits

import (
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
	"github.com/kmaint/kmaint/internal/pools"
	"github.com/kmaint/kmaint/policies"
)

// Sources is what a controller read, from its cache, that tells why
// requests wait.
type Sources struct {
	// Pools are the pools in question: the pool, or the pools that select
	// the node (pools.Of), its own first. More than one admits the node
	// nowhere.
	Pools []string
	// Pool is the object of the first of Pools; nil for the built-in
	// default pool without one.
	Pool *v1alpha1.MaintenancePool
	// Selection tells which pools cannot parse their selector.
	Selection pools.Selection
	// Unreadable say which MaintenancePools cannot be read, and why.
	Unreadable []string
	// Stop is what the cluster's MaintenanceGate says when it stops every
	// admission; nil when it does not.
	Stop *v1alpha1.Stop
	// Windows evaluates the pool's and its RebootPolicies' windows and
	// freezes at now; nil when they were not read (a node in several
	// pools, or while a pool cannot be read).
	Windows *pools.Windows
}

// Pool is what the holds (policies.Holds) read of the whole pool: the
// cluster's stop, the pools that cannot be read, and the pool's selector,
// windows, spec and Halted condition. What only the gate knows (a node's
// own record that halts the pool, its cache behind) and what it decides
// (who waits, the budget) it adds itself.
func Pool(s Sources) policies.WaitInput {
	name := s.Pools[0]
	in := policies.WaitInput{Pool: name, UnreadablePools: s.Unreadable, SelectorErr: s.Selection.Err(name), Stop: s.Stop}
	if s.Windows != nil {
		in.WindowErr = s.Windows.PoolErr()
	}
	spec(&in, s.Pool)
	return in
}

// Node is why the node's requests wait, as the node, its pools and the
// pool's spec and status (the budget as the gate last counted it, the
// blocking query and the canaries that hold it) tell; settings are its
// NodeMaintenances' window settings, by request id. A node in several pools
// or while a pool cannot be read is held whatever its own pool says, and
// only that is read.
func Node(s Sources, node *protocol.NodeState, settings pools.SettingsOf) policies.WaitInput {
	in := policies.WaitInput{Node: node, Pools: s.Pools, Pool: s.Pools[0], UnreadablePools: s.Unreadable, Stop: s.Stop, OptOut: node.OptOut()}
	if len(s.Pools) > 1 {
		// A pool that cannot parse its selector might select the node: it
		// is said as such, not as one more pool that selects it.
		in.Pools = nil
		for _, name := range s.Pools {
			if err := s.Selection.Err(name); err != nil && in.SelectorErr == nil {
				in.Pool, in.SelectorErr = name, err
			} else if err == nil {
				in.Pools = append(in.Pools, name)
			}
		}
		return in
	}
	if len(s.Unreadable) > 0 {
		return in
	}
	in.WindowErr = s.Windows.PoolErr()
	if cur := node.Current(); cur != nil {
		in.Windows = s.Windows.Node(cur.Requests, settings)
	}
	if p := s.Pool; p != nil {
		spec(&in, p)
		in.Budget = policies.Budget{Max: int(p.Status.MaxUnavailable), Unavailable: int(p.Status.Unavailable), Nodes: int(p.Status.Nodes),
			Pending: 1, Waiting: []string{node.Name()}}
		if b := p.Status.BlockingQuery; b != nil {
			in.Blocking = &policies.Blocking{Reason: b.Reason, Message: b.Message}
		}
		if c := p.Status.Canaries; c != nil {
			in.Canaries = &policies.Canaries{Passed: int(c.Passed), Want: int(c.Want)}
		}
		// Only the gate reads the etcd members: the request says what its
		// control-plane pool's guard last said.
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.BlockedCondition); c != nil && c.Reason == v1alpha1.QuorumAtRiskReason {
			in.QuorumAtRisk = c.Message
		}
	}
	return in
}

// spec is what holds every request of the pool in its spec (a pause, a
// blockingPodSelector that cannot be parsed) and its Halted condition; p
// nil (the default pool without an object) holds nothing.
func spec(in *policies.WaitInput, p *v1alpha1.MaintenancePool) {
	if p == nil {
		return
	}
	in.Paused = p.Spec.Paused
	if sel := p.Spec.BlockingPodSelector; sel != nil {
		_, in.PodSelectorErr = sel.AsSelector()
	}
	in.SilencesErr = p.Spec.Silences.Validate()
	in.Halt = policies.PoolHalt(p)
}
