package retention

import (
	"cmp"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmaint/kmaint/api/protocol"
	"github.com/kmaint/kmaint/api/v1alpha1"
)

// Retention is how much finished history is kept. A finished NodeMaintenance
// (Succeeded or Failed) is deleted once it is not among its node's PerNode
// newest finished ones, or once it finished more than MaxAge ago, unless it
// is still read (see Plan). Both bound the history: PerNode its size
// whatever the rate of reboots, MaxAge how long a node that is gone, or
// rarely rebooted, keeps its records.
type Retention struct {
	// PerNode is how many finished NodeMaintenances each node keeps; 0
	// keeps any number.
	PerNode int
	// MaxAge is how long a finished NodeMaintenance is kept; 0 keeps it
	// for ever.
	MaxAge time.Duration
}

// Enabled reports whether anything is ever pruned.
func (r Retention) Enabled() bool { return r.PerNode > 0 || r.MaxAge > 0 }

// Plan decides which of one node's NodeMaintenances (items, as listed by
// spec.nodeName) to delete at now, and when to look again: the next moment
// a kept one ages out, zero when none will. node is the node as the protocol
// reads it; nil when the node does not exist.
//
// Never deleted: an open NodeMaintenance; and, while the node exists,
//   - its latest Succeeded one, which policy cooldowns count from (by its
//     completion time, and by its creation: see protected);
//   - for each RebootPolicy, its latest finished one (the policy does not
//     raise a request again for the episode it names) and its latest
//     Succeeded one (the policy's reboot outcomes);
//   - one whose request the node's reboot-requested annotation still
//     carries, which would otherwise be recorded again;
//   - a record of a request raised on the node in its current boot, which
//     the cap on records per boot counts (see inCurrentBoot).
//
// Records of a node that is gone keep none of those protections: nothing
// reads them but people, and they go by count and age alone.
func Plan(items []v1alpha1.NodeMaintenance, node *protocol.NodeState, keep Retention, now time.Time) (prune []*v1alpha1.NodeMaintenance, next time.Time) {
	if !keep.Enabled() {
		return nil, time.Time{}
	}
	var finished []*v1alpha1.NodeMaintenance
	for i := range items {
		if nm := &items[i]; nm.Unreadable() == nil && nm.Status.Phase.Done() {
			finished = append(finished, nm)
		}
	}
	// Newest first.
	slices.SortFunc(finished, func(a, b *v1alpha1.NodeMaintenance) int {
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(b.Name, a.Name)
	})
	kept := protected(finished, node)
	for i, nm := range finished {
		if kept[nm.Name] {
			continue
		}
		overCount := keep.PerNode > 0 && i >= keep.PerNode
		expires := FinishedAt(nm).Add(keep.MaxAge)
		overAge := keep.MaxAge > 0 && !now.Before(expires)
		switch {
		case overCount || overAge:
			prune = append(prune, nm)
		case keep.MaxAge > 0 && (next.IsZero() || expires.Before(next)):
			next = expires
		}
	}
	return prune, next
}

// protected names the finished NodeMaintenances that are still read (see
// Plan). finished is newest first.
func protected(finished []*v1alpha1.NodeMaintenance, node *protocol.NodeState) map[string]bool {
	kept := map[string]bool{}
	if node == nil {
		return kept
	}
	var lastSucceeded, newestSucceeded *v1alpha1.NodeMaintenance
	policyFinished := map[string]bool{}
	policySucceeded := map[string]*v1alpha1.NodeMaintenance{}
	later := func(a, b *v1alpha1.NodeMaintenance) bool {
		return b == nil || a.Status.PhaseTimes.Succeeded.After(b.Status.PhaseTimes.Succeeded.Time)
	}
	for _, nm := range finished {
		succeeded := nm.Status.Phase == v1alpha1.PhaseSucceeded && nm.Status.PhaseTimes.Succeeded != nil
		if succeeded && later(nm, lastSucceeded) {
			lastSucceeded = nm
		}
		if succeeded && newestSucceeded == nil {
			newestSucceeded = nm
		}
		if p := nm.Spec.Policy; p != "" {
			if !policyFinished[p] {
				policyFinished[p] = true
				kept[nm.Name] = true
			}
			if succeeded && later(nm, policySucceeded[p]) {
				policySucceeded[p] = nm
			}
		}
		if node.Requested != nil && node.Requested.Has(nm.RequestID()) || inCurrentBoot(nm, node) {
			kept[nm.Name] = true
		}
	}
	// Cooldowns read the latest reboot by its completion time, unless that
	// lies in the future (a clock far off, or a forged time), when they
	// read its creation instead: both candidates stay.
	for _, nm := range []*v1alpha1.NodeMaintenance{lastSucceeded, newestSucceeded} {
		if nm != nil {
			kept[nm.Name] = true
		}
	}
	for _, nm := range policySucceeded {
		kept[nm.Name] = true
	}
	return kept
}

// inCurrentBoot reports whether nm records a request raised on the node in
// the boot it is in, or the boot its requests are of: the cap on records
// per node and boot (v1alpha1.MaxRecordedPerBoot) counts those, and pruning
// them would let a daemon have its ids recorded again and again.
func inCurrentBoot(nm *v1alpha1.NodeMaintenance, node *protocol.NodeState) bool {
	boot, ok := nm.Labels[v1alpha1.BootIDLabel]
	if !ok || !nm.Spec.Source.RaisedOnNode() {
		return false
	}
	return node.BootID != "" && boot == v1alpha1.LabelValue(node.BootID) ||
		node.Requested != nil && boot == v1alpha1.LabelValue(node.Requested.BootID)
}

// FinishedAt is when a finished NodeMaintenance finished: the time of its
// Succeeded or Failed phase, else (a record from before phase times were
// kept) when it was created.
func FinishedAt(nm *v1alpha1.NodeMaintenance) time.Time {
	for _, t := range []*metav1.Time{nm.Status.PhaseTimes.Succeeded, nm.Status.PhaseTimes.Failed} {
		if t != nil {
			return t.Time
		}
	}
	return nm.CreationTimestamp.Time
}
