package index

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// The fields NodeMaintenances are indexed by.
const (
	// NodeName is spec.nodeName.
	NodeName = "spec.nodeName"
	// Policy is spec.policy; requests no policy raised are not indexed.
	Policy = "spec.policy"
	// State is Open or Unreadable. Finished records are not indexed by it:
	// nothing asks for them by state, and a year's history is most of the
	// cache (an index entry is about 50 bytes a record).
	State = "kmaint.io/state"
	// OpenOnNode is spec.nodeName of the open records only: the gate looks
	// up the requests of every waiting node at each reconcile, and a node's
	// history, shallow-copied by a cached List, would cost it the whole
	// history of the pool.
	OpenOnNode = "kmaint.io/open-on-node"
)

// The values of State.
const (
	// Open: not Succeeded or Failed yet.
	Open = "open"
	// Finished: Succeeded or Failed.
	Finished = "finished"
	// Unreadable: the stored object does not fit the Go type, so its node,
	// policy and phase are unknown (see v1alpha1.NodeMaintenance.Unreadable).
	// It is in no node's or policy's index.
	Unreadable = "unreadable"
)

// Setup registers the indexes with the manager's cache. It is called once
// per manager, before the controllers that use them start.
func Setup(ctx context.Context, indexer client.FieldIndexer) error {
	for field, values := range Fields() {
		err := indexer.IndexField(ctx, &v1alpha1.NodeMaintenance{}, field, func(o client.Object) []string {
			nm, ok := o.(*v1alpha1.NodeMaintenance)
			if !ok {
				return nil
			}
			return values(nm)
		})
		if err != nil {
			return fmt.Errorf("index maintenances by %s: %w", field, err)
		}
	}
	return nil
}

// Fields are the indexed fields, each with the values a NodeMaintenance is
// indexed under. A record that cannot be read is indexed only by State.
func Fields() map[string]func(*v1alpha1.NodeMaintenance) []string {
	readable := func(values func(*v1alpha1.NodeMaintenance) []string) func(*v1alpha1.NodeMaintenance) []string {
		return func(nm *v1alpha1.NodeMaintenance) []string {
			if nm.Unreadable() != nil {
				return nil
			}
			return values(nm)
		}
	}
	return map[string]func(*v1alpha1.NodeMaintenance) []string{
		NodeName: readable(func(nm *v1alpha1.NodeMaintenance) []string { return []string{nm.Spec.NodeName} }),
		Policy: readable(func(nm *v1alpha1.NodeMaintenance) []string {
			if nm.Spec.Policy == "" {
				return nil
			}
			return []string{nm.Spec.Policy}
		}),
		State: stateValues,
		OpenOnNode: func(nm *v1alpha1.NodeMaintenance) []string {
			if StateOf(nm) != Open {
				return nil
			}
			return []string{nm.Spec.NodeName}
		},
	}
}

// stateValues are the values of State a NodeMaintenance is indexed under.
func stateValues(nm *v1alpha1.NodeMaintenance) []string {
	if s := StateOf(nm); s != Finished {
		return []string{s}
	}
	return nil
}

// StateOf is what state a NodeMaintenance is in.
func StateOf(nm *v1alpha1.NodeMaintenance) string {
	switch {
	case nm.Unreadable() != nil:
		return Unreadable
	case nm.Status.Phase.Done():
		return Finished
	}
	return Open
}
